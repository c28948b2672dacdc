"""The AST rewriting behind `@fem.integrand`: operator calls on field and domain
parameters become calls of the funcs generated for the concrete fields and domain
(`field_eval.py`, `domain.py`), calls of other integrands become calls of their own
rewritten bodies, and `fem.cells(...)` assignments bind local names that stand for a
side domain's cells or a traced field's cell field.
"""

import ast
import typing
from typing import Any

from kernelc.errors import KernelError
from kernelc.fem import operators
from kernelc.fem.domain import cells_of_domain
from kernelc.fem.domain_index import INDEX_OPERATORS
from kernelc.fem.domain_ops import domain_operator
from kernelc.fem.field import cells_of_field
from kernelc.fem.field_nodes import field_op_key, why_not
from kernelc.fem.lookup_call import NAMES, USAGE, LookupCall
from kernelc.frontend.source import Source


class Rewriter(ast.NodeTransformer):
    """Replaces operator calls on field and domain parameters by calls of generated funcs."""

    def __init__(self, itg: Any, source: Source, roles: dict[str, str],
                 targets: dict[str, Any], fields: dict[str, Any], domain: Any) -> None:
        self.itg = itg
        self.source = source
        # copies: fem.cells(...) aliases are added to them
        self.roles = dict(roles)
        self.targets = dict(targets)
        self.fields = dict(fields)
        self.domain = domain
        self.bindings: dict[str, Any] = {}
        self.aliases: set[str] = set()  # local names bound by fem.cells(...)
        # names holding a whole domain argument (geometry part `geo` and indices `index`,
        # `domain_index.py`); the cells of a side domain hold a bare cell argument
        self.domain_args = {name for name, role in roles.items() if role == "domain"}

    def error(self, message: str, node: ast.AST) -> KernelError:
        return KernelError(message, self.source.loc(node), self.itg.__name__)

    def resolve(self, node: ast.expr) -> tuple[bool, Any]:
        """The Python object a (dotted) name denotes, if it is a global or closure name."""
        if isinstance(node, ast.Name):
            if node.id in self.roles:
                return False, None
            return self.source.lookup_global(node.id)
        if isinstance(node, ast.Attribute):
            found, base = self.resolve(node.value)
            if not found:
                return False, None
            if not hasattr(base, node.attr):
                if getattr(base, "__name__", "") == "kernelc.fem":
                    why = (" is not supported by kernelc.fem yet"
                           if node.attr in operators.NOT_SUPPORTED else
                           " is not an operator of kernelc.fem")
                    raise self.error(f"'{ast.unparse(node)}'{why}", node)
                return False, None
            return True, getattr(base, node.attr)
        return False, None

    def bind(self, value: Any, hint: str, node: ast.AST) -> ast.Name:
        name = f"_fem_{hint}_{len(self.bindings)}"
        self.bindings[name] = value
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        role = self.roles.get(node.id)
        if node.id in self.aliases and isinstance(node.ctx, ast.Store):
            raise self.error(f"'{node.id}' holds fem.cells(...) and cannot be reassigned", node)
        if role in ("field", "domain"):
            what = "field" if role == "field" else "domain"
            if isinstance(node.ctx, ast.Store):
                raise self.error(f"{what} argument '{node.id}' cannot be assigned", node)
            raise self.error(f"{what} argument '{node.id}' can only be passed to fem operators "
                             f"(e.g. {node.id}(s), fem.grad({node.id}, s))", node)
        return node

    def is_cells_call(self, node: ast.expr) -> bool:
        """Whether `node` is a call of `fem.cells`."""
        if not isinstance(node, ast.Call):
            return False
        found, obj = self.resolve(node.func)
        return found and obj is operators.cells

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        value = node.value
        if isinstance(value, ast.Call):
            if self.is_cells_call(value):
                if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                    raise self.error("fem.cells(...) must be assigned to a single name", node)
                node.value = self.cells_alias(node.targets[0].id, value)
                return node
        return self.generic_visit(node)

    def cells_alias(self, alias: str, node: ast.Call) -> ast.expr:
        """`alias = fem.cells(x)`: `alias` becomes a domain (the cells of a side domain) or
        a field (the cell field of a traced field) argument; returns the value assigned."""
        if node.keywords or len(node.args) != 1:
            raise self.error("fem.cells(f) takes 1 argument", node)
        target = node.args[0]
        role = self.roles.get(target.id) if isinstance(target, ast.Name) else None
        if role not in ("field", "domain"):
            raise self.error("the argument of fem.cells must be a field or domain argument of "
                             "the integrand", target)
        if alias in self.roles and alias not in self.aliases:
            raise self.error(f"fem.cells(...) cannot be assigned to parameter '{alias}'", node)
        if role == "domain":
            cells, func = cells_of_domain(self.targets[target.id])
        elif target.id in self.aliases:  # the cells of a cell field: the same field
            cells, func = self.targets[target.id], None
            self.fields[alias] = self.fields[target.id]
        else:
            field, domain, func = cells_of_field(self.fields[target.id], self.domain)
            if field is None:
                raise self.error(f"fem.cells: field '{target.id}' is not a discrete field or "
                                 "the trace of one", target)
            self.fields[alias] = field
            cells = field.evaluator(domain)
        self.roles[alias] = role
        self.aliases.add(alias)
        self.targets[alias] = cells
        first = ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), target)
        if func is None:  # already on cells
            if target.id in self.domain_args:
                self.domain_args.add(alias)
            return first
        if role == "domain":
            first = self.geometry_part(first, target.id)
        callee = self.bind(func, "cells", node.func)
        return ast.copy_location(ast.Call(func=callee, args=[first], keywords=[]), node)

    def geometry_part(self, value: ast.expr, name: str) -> ast.expr:
        """The element argument in the domain value `value` of the name `name`."""
        if name not in self.domain_args:
            return value
        return ast.copy_location(ast.Attribute(value=value, attr="geo", ctx=ast.Load()), value)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        callee = node.func
        if isinstance(callee, ast.Name) and self.roles.get(callee.id) == "field":
            return self.operator_call(operators.inner, node, [callee, *node.args])
        if isinstance(callee, ast.Name) and self.roles.get(callee.id) == "domain":
            return self.operator_call(operators.position, node, [callee, *node.args])
        if self.is_cells_call(callee):  # fem.cells(f)(s)
            return self.operator_call(operators.inner, node, [callee, *node.args])
        found, obj = self.resolve(callee)
        if found and isinstance(obj, operators.Operator):
            return self.operator_call(obj, node, list(node.args))
        if found and getattr(obj, "is_fem_integrand", False):
            return self.integrand_call(obj, node)
        return self.generic_visit(node)

    def operator_call(self, op: operators.Operator, node: ast.Call, args: list[ast.expr]
                      ) -> ast.AST:
        if node.keywords and op.name != "lookup":
            raise self.error(f"fem.{op.name} takes no keyword arguments",
                             node.keywords[0].value)
        if not args:
            raise self.error(f"fem.{op.name} needs a field or domain argument", node)
        target, first = args[0], None
        if self.is_cells_call(target):  # fem.grad(fem.cells(f), s) and the like
            alias = f"_fem_cells_alias_{len(self.aliases)}"
            first = self.cells_alias(alias, target)
            target = ast.copy_location(ast.Name(id=alias, ctx=ast.Load()), target)
        role = self.roles.get(target.id) if isinstance(target, ast.Name) else None
        wanted = {"field": ("field",), "domain": ("domain",), "any": ("field", "domain")}
        if role not in wanted[op.target]:
            kinds = " or ".join(wanted[op.target])
            raise self.error(f"the first argument of fem.{op.name} must be a {kinds} argument "
                             "of the integrand", target)
        if op.name == "scalar_type":
            self.expect_args(op, node, args, 1)
            return self.bind(self.domain.geometry.scalar_type, "scalar", node)
        if op.name == "degree":
            self.expect_args(op, node, args, 1)
            return ast.copy_location(ast.Constant(self.fields[target.id].degree), node)
        if op.name == "cells":
            raise self.error("fem.cells(...) can only be assigned to a name or passed to fem "
                             "operators", node)
        rest = [self.visit(a) for a in args[1:]]
        keywords = []
        if op.name == "lookup":  # its forms are told apart by types (lookup_call.py)
            keywords = self.lookup_keywords(node, args)
        else:
            self.expect_call_form(op, node, args, role)
        if role == "field":
            evaluator = self.targets[target.id]
            func = evaluator.op(field_op_key(op.name, len(args)))
            if func is None:
                raise self.error(f"Operator `{op.name}` is not defined for this field: "
                                 f"{why_not(evaluator, op.name, len(args))}", node)
        else:
            domain = self.targets[target.id]
            func = domain_operator(domain, op.name)
            if func is None:
                raise self.error(f"fem.{op.name} is not available on {domain.name}", node)
            if op.name in INDEX_OPERATORS and target.id not in self.domain_args:
                raise self.error(f"fem.{op.name} is not available on the cells of a side "
                                 "domain", node)
        if op.name == "lookup":
            geometry = self.targets[target.id].geometry
            func = LookupCall(func, geometry.dimension, geometry.scalar_type,
                              geometry.environment_count(),
                              hasattr(geometry, "cell_environment_index"))
        callee = self.bind(func, op.name, node.func)
        if first is None:
            first = ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), target)
        if role == "domain" and op.name not in INDEX_OPERATORS:
            first = self.geometry_part(first, target.id)
        return ast.copy_location(ast.Call(func=callee, args=[first, *rest], keywords=keywords),
                                 node)

    def lookup_keywords(self, node: ast.Call, args: list[ast.expr]) -> list[ast.keyword]:
        """Checks the argument count and keyword names of `fem.lookup` (their types are
        checked when the integrand is compiled) and rewrites the keyword values."""
        given = len(args) + len(node.keywords)
        if len(args) < 2 or given > 6:
            raise self.error(f"fem.lookup takes 2 to 6 arguments, got {given}: {USAGE}",
                             node)
        for keyword in node.keywords:
            if keyword.arg not in NAMES:
                raise self.error(f"fem.lookup has no keyword argument '{keyword.arg}' (it "
                                 f"takes {', '.join(NAMES)})", keyword.value)
        return [ast.copy_location(ast.keyword(arg=k.arg, value=self.visit(k.value)), k)
                for k in node.keywords]

    def integrand_call(self, other: Any, node: ast.Call) -> ast.AST:
        """A call of another integrand: its body specialised for the fields passed, called
        with the same arguments (fields and domains as their structs)."""
        params = other.argspec.args
        if len(node.args) > len(params):
            raise self.error(f"integrand '{other.__name__}' takes {len(params)} arguments, "
                             f"got {len(node.args)}", node)
        given = dict(zip(params, node.args))
        for keyword in node.keywords:
            if keyword.arg not in params or keyword.arg in given:
                raise self.error(f"unexpected argument '{keyword.arg}' for integrand "
                                 f"'{other.__name__}'", keyword.value)
            given[keyword.arg] = keyword.value
        missing = [p for p in params if p not in given]
        if missing:
            raise self.error(f"missing arguments to integrand '{other.__name__}': "
                             f"{', '.join(missing)}", node)
        roles = other.parameter_roles()
        annotations = other.annotations
        fields, value_types, args = {}, {}, []
        for name in params:
            expr = given[name]
            if roles[name] in ("field", "domain"):
                if not (isinstance(expr, ast.Name) and self.roles.get(expr.id) == roles[name]):
                    raise self.error(f"argument '{name}' of integrand '{other.__name__}' must "
                                     f"be a {roles[name]} argument of the caller", expr)
                if roles[name] == "field":
                    fields[name] = self.fields[expr.id]
                args.append(ast.copy_location(ast.Name(id=expr.id, ctx=ast.Load()), expr))
                continue
            if roles[name] == "value":
                ann = annotations.get(name)
                value_types[name] = typing.Any if ann is None else ann
            args.append(self.visit(expr))
        body = other.body(fields, self.domain, value_types)
        callee = self.bind(body, "integrand", node.func)
        return ast.copy_location(ast.Call(func=callee, args=args, keywords=[]), node)

    def expect_call_form(self, op: operators.Operator, node: ast.Call, args: list[ast.expr],
                         role: str) -> None:
        """Checks the argument count against the operator's call form (default: (field or
        domain, sample))."""
        counts, shown = operators.CALL_FORMS.get(op.name, ((2,), None))
        if len(args) not in counts:
            shown = shown or ("(f, s)" if role == "field" else "(domain, s)")
            expected = " or ".join(str(c) for c in counts)
            raise self.error(f"fem.{op.name}{shown} takes {expected} arguments, got "
                             f"{len(args)}", node)

    def expect_args(self, op: operators.Operator, node: ast.Call, args: list[ast.expr],
                    count: int) -> None:
        if len(args) != count:
            shown = {1: "(f)", 2: "(f, s)", 3: "(f, s, node_index)"}[count]
            raise self.error(f"fem.{op.name}{shown} takes {count} argument"
                             f"{'s' if count > 1 else ''}, got {len(args)}", node)


