"""Records: typing.NamedTuple's class syntax on a plain namedtuple."""

from __future__ import annotations

import pickle

import pytest

from mdagent.core.records import Record


class Point(Record):
    """A point on a grid."""

    x: int
    y: int = 0
    label: str = ""

    @property
    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)

    @classmethod
    def origin(cls) -> Point:
        return cls(0)


def test_fields_defaults_and_methods_are_those_written_in_the_class():
    p = Point(3, -4)
    assert (p.x, p.y, p.label) == (3, -4, "")
    assert p == (3, -4, "") and isinstance(p, tuple) and isinstance(p, Point)
    assert p.norm1 == 7 and Point.origin() == Point(0, 0, "")
    assert Point._fields == ("x", "y", "label")
    assert Point._field_defaults == {"y": 0, "label": ""}
    assert p._replace(label="a")._asdict() == {"x": 3, "y": -4, "label": "a"}
    assert Point.__doc__ == "A point on a grid." and Point.__name__ == "Point"
    assert Point.__module__ == __name__


def test_a_record_is_immutable_and_has_no_instance_dict():
    p = Point(1)
    with pytest.raises(AttributeError):
        p.x = 2
    with pytest.raises(AttributeError):
        p.other = 1
    assert not hasattr(p, "__dict__")


def test_a_missing_required_field_is_a_type_error():
    with pytest.raises(TypeError):
        Point()


def test_a_field_without_default_after_one_with_is_refused_at_class_creation():
    with pytest.raises(TypeError, match="'b' without a default follows one with"):

        class Bad(Record):
            a: int = 1
            b: int


def test_records_pickle_as_their_own_class():
    assert pickle.loads(pickle.dumps(Point(1, 2, "p"))) == Point(1, 2, "p")
    assert type(pickle.loads(pickle.dumps(Point(1)))) is Point


def test_a_record_takes_no_other_base_and_needs_fields():
    class Mixin:
        pass

    with pytest.raises(TypeError, match="derives from Record alone"):

        class Mixed(Record, Mixin):
            a: int

    with pytest.raises(TypeError, match="needs annotated fields"):

        class Empty(Record):
            """No fields: nothing to name."""
