//! Binding array expressions: `ARRAY[…]`, subscripts, `x op ANY/ALL (array)`, the array
//! operators (`||`, `@>`, `<@`, `&&`) and the functions whose argument types follow the
//! array's element type.

use sqlparser::ast;

use crate::array::array_of;
use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::types::{DataType, Value};

/// 42804 for a non-array where an array belongs.
fn not_array(what: &str, ty: DataType) -> SqlError {
    SqlError::new(
        code::DATATYPE_MISMATCH,
        format!("{what} must be an array, not type {}", ty.sql_name()),
    )
}

impl<'a> Planner<'a> {
    /// `ARRAY[a, b, …]`: the elements take their common type.
    pub(crate) fn array_constructor(
        &mut self,
        elems: &[ast::Expr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        crate::array::check_len(elems.len())?;
        let mut bound = Vec::with_capacity(elems.len());
        let mut elem = DataType::Unknown;
        for e in elems {
            let (x, t) = self.expr(e, scope, aggs)?;
            if t.element().is_some() {
                return Err(SqlError::unsupported("multi-dimensional arrays"));
            }
            elem = DataType::common(elem, t);
            bound.push((x, t));
        }
        let elem = if elem == DataType::Unknown { DataType::Text } else { elem };
        let mut fixed = Vec::with_capacity(bound.len());
        for (x, t) in bound {
            let x = self.unify(x, t, elem)?;
            fixed.push(if t != elem && t != DataType::Unknown {
                Expr::Cast(Box::new(x), elem)
            } else {
                x
            });
        }
        let ty = array_of(elem)?;
        if fixed.iter().all(|x| matches!(x, Expr::Const(_))) {
            let ctx = Ctx::new(&[], self.env);
            let items = fixed.iter().map(|x| x.eval(&[], &ctx)).collect::<Result<Vec<_>>>()?;
            return Ok((Expr::Const(Value::Array(items)), ty));
        }
        Ok((Expr::Func(Func::MakeArray, fixed), ty))
    }

    /// Gives an untyped operand the array type `want` (a literal '{1,2}', a parameter).
    pub(crate) fn coerce_array(
        &mut self,
        x: Expr,
        ty: DataType,
        want: DataType,
    ) -> Result<(Expr, DataType)> {
        if ty == DataType::Unknown {
            return self.coerce(x, ty, want);
        }
        if ty.element().is_none() {
            return Err(not_array("the operand", ty));
        }
        Ok((x, ty))
    }

    /// `x op ANY (array)` / `x op ALL (array)`.
    pub(crate) fn quantified(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        all: bool,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        let op = match op {
            ast::BinaryOperator::Eq => BinOp::Eq,
            ast::BinaryOperator::NotEq => BinOp::NotEq,
            ast::BinaryOperator::Lt => BinOp::Lt,
            ast::BinaryOperator::LtEq => BinOp::LtEq,
            ast::BinaryOperator::Gt => BinOp::Gt,
            ast::BinaryOperator::GtEq => BinOp::GtEq,
            other => {
                let q = if all { "ALL" } else { "ANY" };
                return Err(SqlError::unsupported(format!("{other} {q}")));
            }
        };
        // `x = ANY (SELECT …)` is IN.
        if let ast::Expr::Subquery(q) = right {
            if op == BinOp::Eq && !all {
                let e = ast::Expr::InSubquery {
                    expr: Box::new(left.clone()),
                    subquery: q.clone(),
                    negated: false,
                };
                return self.expr(&e, scope, aggs);
            }
            return Err(SqlError::unsupported("a subquery with ANY/ALL other than = ANY"));
        }
        let (x, xty) = self.expr(left, scope, aggs)?;
        let (arr, aty) = self.expr(right, scope, aggs)?;
        let (x, xty) = match aty.element() {
            Some(elem) => self.coerce(x, xty, elem)?,
            None => (x, xty),
        };
        // An untyped array literal takes the element type without its modifier.
        let want =
            array_of(if xty == DataType::Unknown { DataType::Text } else { xty.unmodified() })?;
        let (arr, _) = self.coerce_array(arr, aty, want)?;
        Ok((Expr::AnyOp(Box::new(x), op, Box::new(arr), all), DataType::Bool))
    }

    /// `a[i]`: 1-based (0-based for int2vector and oidvector); NULL outside the array.
    pub(crate) fn subscript(
        &mut self,
        root: &ast::Expr,
        access: &[ast::AccessExpr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        // `t.col[i]` arrives as `t` with the access chain `.col`, `[i]`: the leading field
        // accesses are the column's qualified name.
        let dots = access.iter().take_while(|a| matches!(a, ast::AccessExpr::Dot(_))).count();
        let (root, access) = if dots > 0 {
            let mut parts = match root {
                ast::Expr::Identifier(i) => vec![i.clone()],
                ast::Expr::CompoundIdentifier(p) => p.clone(),
                _ => return self.record_field(root, access, scope, aggs),
            };
            for a in &access[..dots] {
                match a {
                    ast::AccessExpr::Dot(ast::Expr::Identifier(i)) => parts.push(i.clone()),
                    _ => return Err(SqlError::unsupported("field access on a composite value")),
                }
            }
            (ast::Expr::CompoundIdentifier(parts), &access[dots..])
        } else {
            (root.clone(), access)
        };
        if access.is_empty() {
            return self.expr(&root, scope, aggs);
        }
        // `doc['a'][0]`: jsonb subscripts, each a `->` (a key, or an element by position).
        let (arr, aty) = self.expr(&root, scope, aggs)?;
        if aty == DataType::Jsonb {
            let mut doc = arr;
            for a in access {
                let ast::AccessExpr::Subscript(ast::Subscript::Index { index }) = a else {
                    return Err(SqlError::new(
                        code::DATATYPE_MISMATCH,
                        "jsonb subscript does not support slices",
                    ));
                };
                let (i, ity) = self.expr(index, scope, aggs)?;
                let (i, ity) = self.coerce(i, ity, DataType::Text)?;
                let (i, ity) = match ity {
                    DataType::Int2 | DataType::Int4 | DataType::Int8 | DataType::Text => (i, ity),
                    DataType::Varchar(_) | DataType::Char(_) => (i, DataType::Text),
                    other => {
                        return Err(SqlError::new(
                            code::DATATYPE_MISMATCH,
                            format!("subscript type {} is not supported", other.sql_name()),
                        )
                        .hint("jsonb subscript must be coercible to either integer or text."))
                    }
                };
                doc = self
                    .json_binary(crate::bind::json::JsonOp::Field, doc, DataType::Jsonb, i, ity)?
                    .0;
            }
            return Ok((doc, DataType::Jsonb));
        }
        let [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] = access else {
            return Err(SqlError::unsupported("array slices and multi-dimensional subscripts"));
        };
        if aty == DataType::Name {
            // A name is a fixed array of characters, subscripted from 0 (`typname[0] = '_'`
            // tests the first, as pg_dump does).
            let (i, ity) = self.expr(index, scope, aggs)?;
            let (i, _) = self.coerce(i, ity, DataType::Int8)?;
            let from = Expr::Binary(BinOp::Add, Box::new(i), Box::new(Expr::Const(Value::Int(1))));
            let one = Expr::Const(Value::Int(1));
            let text = Expr::Func(Func::Substr, vec![arr, from, one]);
            return Ok((Expr::Cast(Box::new(text), DataType::PgChar), DataType::PgChar));
        }
        let Some(elem) = aty.element() else {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!(
                    "cannot subscript type {} because it does not support subscripting",
                    aty.sql_name()
                ),
            ));
        };
        let (i, ity) = self.expr(index, scope, aggs)?;
        let (i, _) = self.coerce(i, ity, DataType::Int8)?;
        let i = if matches!(aty, DataType::Array(_)) {
            i
        } else {
            Expr::Binary(BinOp::Add, Box::new(i), Box::new(Expr::Const(Value::Int(1))))
        };
        Ok((Expr::Func(Func::ArrayElement, vec![arr, i]), elem))
    }

    /// `(r).x` / `(r).n` of an `_pg_expandarray` record.
    fn record_field(
        &mut self,
        root: &ast::Expr,
        access: &[ast::AccessExpr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        let [ast::AccessExpr::Dot(ast::Expr::Identifier(field))] = access else {
            return Err(SqlError::unsupported("field access on a composite value"));
        };
        // `(f(…)).col` of a function made with CREATE FUNCTION that returns a row.
        let mut call = root;
        while let ast::Expr::Nested(inner) = call {
            call = inner;
        }
        if let ast::Expr::Function(f) = call {
            let name = crate::bind::srf::function_name(&crate::bind::name_as_written(&f.name)?);
            if f.over.is_none()
                && crate::functions::by_name(&name).is_none()
                && self.returns_rows(&name)?
            {
                if let Some((e, shape)) = self.routine_rows(f, scope)? {
                    let (Some(columns), false) = (&shape.columns, shape.set) else {
                        return Err(SqlError::unsupported(format!(
                            "a column of set-returning function {name}() in an expression"
                        ))
                        .hint("Call it in FROM: SELECT t.col FROM f(…) AS t."));
                    };
                    let field = ident(field);
                    let Some(i) = columns.iter().position(|(n, _)| *n == field) else {
                        return Err(SqlError::new(
                            code::UNDEFINED_COLUMN,
                            format!("column \"{field}\" not found in data type record"),
                        ));
                    };
                    let at = Expr::Const(Value::Int(i as i64 + 1));
                    return Ok((Expr::Func(Func::ArrayElement, vec![e, at]), columns[i].1));
                }
            }
        }
        let (r, t) = self.expr(root, scope, aggs)?;
        let DataType::ExpandedElement(e) = t else {
            return Err(SqlError::unsupported("field access on a composite value"));
        };
        let (i, ty) = match ident(field).as_str() {
            "x" => (1, *e),
            "n" => (2, DataType::Int4),
            other => {
                return Err(SqlError::new(
                    code::UNDEFINED_COLUMN,
                    format!("column \"{other}\" not found in data type record"),
                ))
            }
        };
        Ok((Expr::Func(Func::ArrayElement, vec![r, Expr::Const(Value::Int(i))]), ty))
    }

    /// `a || b` where either side is an array: concatenation, or appending / prepending an
    /// element.
    pub(crate) fn array_concat(
        &mut self,
        a: Expr,
        at: DataType,
        b: Expr,
        bt: DataType,
    ) -> Result<(Expr, DataType)> {
        let (ty, a, b) = match (at.element(), bt.element()) {
            (None, None) => return Err(not_array("an operand of ||", at)),
            (Some(_), Some(_)) => (at, a, b),
            (Some(e), None) => {
                let (b, bt2) = self.coerce(b, bt, e)?;
                if bt == DataType::Unknown && !matches!(b, Expr::Param(_)) {
                    // An untyped literal next to an array is an array ('{3}'), as in
                    // PostgreSQL; a typed value is an element.
                    let (b, _) = self.coerce(b, bt2, at)?;
                    return Ok((Expr::Func(Func::ArrayCat, vec![a, b]), at));
                }
                (at, a, Expr::Func(Func::MakeArray, vec![b]))
            }
            (None, Some(e)) => {
                let (a, _) = self.coerce(a, at, e)?;
                (bt, Expr::Func(Func::MakeArray, vec![a]), b)
            }
        };
        Ok((Expr::Func(Func::ArrayCat, vec![a, b]), ty))
    }

    /// `@>`, `<@` and `&&` of arrays, of operands already bound.
    pub(crate) fn array_predicate_bound(
        &mut self,
        a: Expr,
        at: DataType,
        func: Func,
        b: Expr,
        bt: DataType,
    ) -> Result<(Expr, DataType)> {
        let (a, at) = if at == DataType::Unknown { self.coerce(a, at, bt)? } else { (a, at) };
        let (b, bt) = self.coerce(b, bt, at)?;
        if at.element().is_none() {
            return Err(not_array("the left operand", at));
        }
        if bt.element().is_none() {
            return Err(not_array("the right operand", bt));
        }
        Ok((Expr::Func(func, vec![a, b]), DataType::Bool))
    }

    /// The functions whose other arguments take the array's element type:
    /// array_append(a, x), array_prepend(x, a), array_remove(a, x), array_position(a, x),
    /// array_cat(a, b). `None` for any other function.
    pub(crate) fn array_function(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<Option<(Expr, DataType)>> {
        let (func, array_at) = match name {
            "array_append" => (Func::ArrayAppend, 0),
            "array_prepend" => (Func::ArrayPrepend, 1),
            "array_remove" => (Func::ArrayRemove, 0),
            "array_position" => (Func::ArrayPosition, 0),
            "array_cat" => (Func::ArrayCat, 0),
            _ => return Ok(None),
        };
        crate::bind::function::check_arity(name, args.len(), 2, 2)?;
        let (a, at) = self.expr(&args[array_at], scope, aggs)?;
        let (x, xt) = self.expr(&args[1 - array_at], scope, aggs)?;
        let (a, at) = if at == DataType::Unknown {
            let want = array_of(if xt == DataType::Unknown { DataType::Text } else { xt })?;
            self.coerce(a, at, want)?
        } else {
            (a, at)
        };
        let Some(elem) = at.element() else { return Err(not_array("the array argument", at)) };
        let (x, _) = if func == Func::ArrayCat {
            self.coerce(x, xt, at)?
        } else {
            self.coerce(x, xt, elem)?
        };
        let args = if array_at == 0 { vec![a, x] } else { vec![x, a] };
        let ty = if func == Func::ArrayPosition { DataType::Int4 } else { at };
        Ok(Some((Expr::Func(func, args), ty)))
    }
}
