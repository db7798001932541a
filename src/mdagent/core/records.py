"""Named records: ``typing.NamedTuple``'s class syntax at ``collections.namedtuple``'s cost.

Every ``agent /name`` builds a handful of record classes (layers, specs, calls,
results). With ``typing.NamedTuple`` that costs importing :mod:`typing`, about
a tenth of the whole command's time, and compiling each field's annotation
when the class is made. A :class:`Record` reads only the names of its
annotations (never evaluates them, so ``from __future__ import annotations``
is fine) and the defaults written beside them::

    class Layer(Record):
        '''One folder of declarations.'''

        path: Path
        kind: str = "project"

        @property
        def skills_only(self) -> bool: ...

The class made is a subclass of a plain namedtuple: immutable, compared and
hashed as a tuple, with ``_replace``, ``_asdict``, ``_fields`` and
``_field_defaults``.
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["Record"]


class _RecordType(type):
    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict) -> type:
        if not bases:  # Record itself
            return super().__new__(mcls, name, bases, namespace)
        if bases != (Record,):
            # The class made is a namedtuple: it could not keep another base.
            raise TypeError(f"{name}: a record derives from Record alone")
        fields = tuple(namespace.get("__annotations__", {}))
        if not fields:
            # Python 3.14 keeps a class's annotations out of its namespace unless
            # the module has `from __future__ import annotations`: say so, never
            # make a record without fields.
            raise TypeError(
                f"{name}: a record needs annotated fields "
                "(and `from __future__ import annotations` in its module)"
            )
        defaults = []
        for field in fields:
            if field in namespace:
                defaults.append(namespace.pop(field))
            elif defaults:
                # namedtuple gives defaults to the last fields: a field without
                # one after a field with one would silently take its neighbour's.
                raise TypeError(f"{name}: field {field!r} without a default follows one with")
        base = namedtuple(name, fields, defaults=defaults, module=namespace.get("__module__"))
        namespace.setdefault("__slots__", ())
        return type(name, (base,), namespace)


class Record(metaclass=_RecordType):
    """Base of a record class: annotated fields, optional trailing defaults, methods."""

    __slots__ = ()
