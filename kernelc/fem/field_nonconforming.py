"""Fields of one geometry seen from the elements of another (Warp's `fem.NonconformingField`).

`NonconformingField(domain, field)` evaluates `field` (a field on the cells of any
geometry) at the world positions of `domain`'s samples: each position is looked up in the
field's geometry (`fem.lookup`'s cell search), and the field is evaluated there when the
cell's point found lies within 1e-3 of the position (Warp's squared-distance bound 1e-6);
elsewhere the `background` field (by default zero) gives the value, as in Warp. Values,
gradients, divergences and the operators made from them (`fem.D`, `fem.curl`) all follow
that rule; `outer` is `inner` (so jumps vanish).
"""

from typing import Any

import kernelc as kc
from kernelc.fem.domain import Cells, GeometryDomain, Sides
from kernelc.fem.field import FieldLike
from kernelc.fem.field_eval import FieldEval
from kernelc.fem.field_implicit import UniformField
from kernelc.fem.types import NULL_ELEMENT_INDEX, ElementKind

LOOKUP_EPS = 1.0e-6  # squared distance to the found point below which the field applies

# Generated funcs, by the kinds of the domain, the field (and its geometry), the background.
_EVALS: dict[tuple, FieldEval] = {}


def _struct(name: str, members: dict[str, Any]) -> type:
    return kc.struct(type(name, (), {"__annotations__": dict(members)}))


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


class NonconformingField(FieldLike):
    """A field defined on another geometry, evaluated at this domain's points through cell
    lookups (Warp's `fem.NonconformingField`).

    Args:
        domain: The domain the field is evaluated on (cells or sides of any geometry).
        field: The field to evaluate: a field on the cells of its own geometry (usually a
            `DiscreteField`), of the same scalar type as `domain`'s geometry.
        background: The value where a point is not in `field`'s geometry: a value of the
            field's type (default 0) or a field on `domain`.

    Raises:
        ValueError: `field` is not a cell field, or `background` a field of another
            domain.
        NotImplementedError: The geometries' scalar types differ, or `field`'s geometry has
            no cell lookup.
    """

    def __init__(self, domain: GeometryDomain, field: Any, background: Any = 0.0) -> None:
        if not isinstance(field, FieldLike) or field.element_kind != ElementKind.CELL:
            raise ValueError("a NonconformingField needs a field defined on cells")
        geometry = field.geometry
        if geometry.scalar_type != domain.geometry.scalar_type:
            raise NotImplementedError("a NonconformingField between geometries of different "
                                      "scalar types is not supported yet")
        self.domain = domain
        self.field = field
        self._field_cells = Cells(geometry)
        if self._field_cells.element_lookup is None:
            raise NotImplementedError(f"{geometry.name} has no cell lookup")
        environments = geometry.environment_count()
        if environments > 1 and environments != domain.geometry.environment_count():
            raise ValueError("Nonconforming fields with multiple environments must have "
                             "matching environment counts")
        if not isinstance(background, FieldLike):
            background = UniformField(domain, self.dtype(background))
        elif (background.geometry is not domain.geometry
              or background.element_kind != domain.element_kind):
            raise ValueError("Background field must be conforming to the domain")
        self.background = background

    @property
    def geometry(self) -> Any:
        """The domain's geometry."""
        return self.domain.geometry

    @property
    def element_kind(self) -> ElementKind:
        return self.domain.element_kind

    @property
    def dtype(self) -> Any:
        """The field's value type."""
        return self.field.dtype

    @property
    def degree(self) -> int:
        """The field's polynomial degree."""
        return self.field.degree

    @property
    def name(self) -> str:
        return f"{self.domain.name}_{self.field.name}_{self.background.name}"

    @property
    def kind_name(self) -> str:
        return (f"Nonconforming_{self.field.kind_name}_{self._field_cells.name}_"
                f"{self.background.kind_name}")

    def trace(self) -> "NonconformingField":
        """The same field evaluated on the sides of the domain's geometry."""
        if self.element_kind == ElementKind.SIDE:
            raise RuntimeError("Trace only available for field defined on cell elements")
        return NonconformingField(Sides(self.domain.geometry_partition), self.field,
                                  self.background.trace())

    def gradient_valid(self) -> bool:
        """Whether the field (and the background) have a gradient."""
        return self.evaluator(self.domain).op("grad") is not None

    def divergence_valid(self) -> bool:
        """Whether the field (and the background) have a divergence."""
        return self.evaluator(self.domain).op("div") is not None

    def evaluator(self, domain: GeometryDomain) -> FieldEval:
        key = (self.kind_name, domain.name)
        if key not in _EVALS:
            _EVALS[key] = self._make_evaluator(domain)
        return _EVALS[key]

    def _make_evaluator(self, domain: GeometryDomain) -> FieldEval:
        cells = self._field_cells
        inside, outside = self.field.evaluator(cells), self.background.evaluator(domain)
        Arg = _struct(f"NonconformingFieldArg_{_ident(self.kind_name)}_{_ident(domain.name)}",
                      {"elt": domain.ElementArg, "field": inside.Arg,
                       "background": outside.Arg})
        position, lookup = domain.element_position, cells.element_lookup
        cell_position = cells.element_position
        scalar = domain.geometry.scalar_type
        eps = scalar(LOOKUP_EPS)

        if self.field.geometry.environment_count() > 1:
            # a sample is looked for in its own environment
            from kernelc.fem.domain_ops import domain_operator

            environment = domain_operator(domain, "environment_index")

            @kc.func
            def find(arg: Arg, s: Any, pos: Any):
                return lookup(arg.field.elt, pos, environment(arg.elt, s))
        else:
            @kc.func
            def find(arg: Arg, s: Any, pos: Any):
                return lookup(arg.field.elt, pos)

        def through_lookup(field_op: Any, background_op: Any) -> Any:
            @kc.func
            def nonconforming(arg: Arg, s: Any):
                pos = position(arg.elt, s)
                found = find(arg, s, pos)
                if found.element_index != NULL_ELEMENT_INDEX:
                    # the closest point of a cell: the field applies if it is the position
                    if kc.length_sq(pos - cell_position(arg.field.elt, found)) <= eps:
                        return field_op(arg.field, found)
                return background_op(arg.background, s)

            return nonconforming

        ops = {}
        for name in ("inner", "grad", "div"):
            field_op, background_op = inside.op(name), outside.op(name)
            op = None if field_op is None or background_op is None else through_lookup(
                field_op, background_op)
            ops[name] = op
            ops["outer" if name == "inner" else f"{name}_outer"] = op
        return FieldEval(Arg, ops, scalar, inside.grad_type, inside.dtype)

    def fill_arg(self, arg: Any, domain: GeometryDomain, device: Any) -> None:
        arg.elt = domain.element_arg_value(device)
        inside = self.field.evaluator(self._field_cells).Arg()
        self.field.fill_arg(inside, self._field_cells, device)
        arg.field = inside
        outside = self.background.evaluator(domain).Arg()
        self.background.fill_arg(outside, domain, device)
        arg.background = outside


__all__ = ["NonconformingField"]
