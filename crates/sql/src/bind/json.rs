//! Binding the json and jsonb operators (`->`, `->>`, `#>`, `#>>`, `@>`, `<@`, `?`, `?|`,
//! `?&`, `||`, `-`, `#-`) and functions, whose behaviour follows their operands' types: a
//! value of either type is text at run time, so the binder says which one it is.

use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::types::DataType;

/// A JSON operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonOp {
    Field,
    FieldText,
    Path,
    PathText,
    Contains,
    Contained,
    Exists,
    ExistsAny,
    ExistsAll,
    Concat,
    Delete,
    DeletePath,
}

fn is_json(t: DataType) -> bool {
    matches!(t, DataType::Json | DataType::Jsonb)
}

impl JsonOp {
    /// The JSON operator `op` is for operands of these types; `None` when it is not one
    /// (`@>`, `<@`, `||` and `-` are JSON operators only beside a json operand).
    pub(crate) fn of(op: &ast::BinaryOperator, at: DataType, bt: DataType) -> Option<JsonOp> {
        use ast::BinaryOperator as O;
        Some(match op {
            O::Arrow => JsonOp::Field,
            O::LongArrow => JsonOp::FieldText,
            O::HashArrow => JsonOp::Path,
            O::HashLongArrow => JsonOp::PathText,
            O::Question => JsonOp::Exists,
            O::QuestionPipe => JsonOp::ExistsAny,
            O::QuestionAnd => JsonOp::ExistsAll,
            O::HashMinus => JsonOp::DeletePath,
            O::AtArrow if is_json(at) || is_json(bt) => JsonOp::Contains,
            O::ArrowAt if is_json(at) || is_json(bt) => JsonOp::Contained,
            O::StringConcat if at == DataType::Jsonb || bt == DataType::Jsonb => JsonOp::Concat,
            O::Minus if is_json(at) => JsonOp::Delete,
            _ => return None,
        })
    }

    /// Whether the operator means nothing but JSON.
    pub(crate) fn json_only(self) -> bool {
        !matches!(self, JsonOp::Contains | JsonOp::Contained | JsonOp::Concat | JsonOp::Delete)
    }

    fn symbol(self) -> &'static str {
        match self {
            JsonOp::Field => "->",
            JsonOp::FieldText => "->>",
            JsonOp::Path => "#>",
            JsonOp::PathText => "#>>",
            JsonOp::Contains => "@>",
            JsonOp::Contained => "<@",
            JsonOp::Exists => "?",
            JsonOp::ExistsAny => "?|",
            JsonOp::ExistsAll => "?&",
            JsonOp::Concat => "||",
            JsonOp::Delete => "-",
            JsonOp::DeletePath => "#-",
        }
    }
}

fn type_text(t: DataType) -> String {
    if t == DataType::Unknown {
        "unknown".into()
    } else {
        t.sql_name()
    }
}

fn no_operator(op: JsonOp, at: DataType, bt: DataType) -> SqlError {
    SqlError::new(
        code::UNDEFINED_FUNCTION,
        format!("operator does not exist: {} {} {}", type_text(at), op.symbol(), type_text(bt)),
    )
    .hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}

/// `x` as JSON text: to_json of its type (a json or jsonb value as it is).
fn as_json(x: Expr, t: DataType) -> Expr {
    match t {
        DataType::Json | DataType::Jsonb => x,
        t => Expr::Func(Func::ToJson(t, false), vec![x]),
    }
}

fn text_array() -> DataType {
    crate::array::array_of_plain(DataType::Text)
}

impl Planner<'_> {
    /// A JSON operator on operands already bound.
    pub(crate) fn json_binary(
        &mut self,
        op: JsonOp,
        a: Expr,
        at: DataType,
        b: Expr,
        bt: DataType,
    ) -> Result<(Expr, DataType)> {
        use JsonOp as J;
        if matches!(op, J::Contains | J::Contained | J::Concat) {
            // jsonb with jsonb; an untyped side is read as jsonb.
            let (a, at) = self.coerce(a, at, DataType::Jsonb)?;
            let (b, bt) = self.coerce(b, bt, DataType::Jsonb)?;
            if at != DataType::Jsonb || bt != DataType::Jsonb {
                return Err(no_operator(op, at, bt));
            }
            let (func, args, ty) = match op {
                J::Contains => (JsonFunc::Contains, vec![a, b], DataType::Bool),
                J::Contained => (JsonFunc::Contains, vec![b, a], DataType::Bool),
                _ => (JsonFunc::Concat, vec![a, b], DataType::Jsonb),
            };
            return self.json_call(func, true, args, ty);
        }
        if at == DataType::Unknown {
            return Err(SqlError::new(
                "42725",
                format!("operator is not unique: unknown {} {}", op.symbol(), type_text(bt)),
            )
            .hint("Could not choose a best candidate operator. You might need to add explicit type casts."));
        }
        if !is_json(at) {
            return Err(no_operator(op, at, bt));
        }
        let jsonb = at == DataType::Jsonb;
        // The operators only jsonb has.
        if !jsonb && !matches!(op, J::Field | J::FieldText | J::Path | J::PathText) {
            return Err(no_operator(op, at, bt));
        }
        let want = match op {
            J::Field | J::FieldText | J::Exists => DataType::Text,
            J::Delete => {
                if bt.is_integer() || bt.element().is_some() {
                    bt
                } else {
                    DataType::Text
                }
            }
            _ => text_array(),
        };
        let (b, bt) = self.coerce(b, bt, want)?;
        let right_ok = match op {
            J::Field | J::FieldText | J::Delete => {
                bt.is_integer() || bt.is_string() || (op == J::Delete && bt == text_array())
            }
            J::Exists => bt.is_string(),
            _ => bt.element().is_some_and(|e| e.is_string()),
        };
        if !right_ok {
            return Err(no_operator(op, at, bt));
        }
        let (func, ty) = match op {
            J::Field => (JsonFunc::Field, at),
            J::FieldText => (JsonFunc::FieldText, DataType::Text),
            J::Path => (JsonFunc::Path, at),
            J::PathText => (JsonFunc::PathText, DataType::Text),
            J::Exists => (JsonFunc::Exists, DataType::Bool),
            J::ExistsAny => (JsonFunc::ExistsAny, DataType::Bool),
            J::ExistsAll => (JsonFunc::ExistsAll, DataType::Bool),
            J::Delete => (JsonFunc::Delete, DataType::Jsonb),
            _ => (JsonFunc::DeletePath, DataType::Jsonb),
        };
        self.json_call(func, jsonb, vec![a, b], ty)
    }

    /// The call, evaluated now when every argument is a constant (the functions are
    /// immutable).
    fn json_call(
        &mut self,
        func: JsonFunc,
        jsonb: bool,
        args: Vec<Expr>,
        ty: DataType,
    ) -> Result<(Expr, DataType)> {
        self.fold(Func::Json(func, jsonb), args, ty)
    }

    /// The json and jsonb functions; `None` for any other name.
    pub(crate) fn json_function(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<Option<(Expr, DataType)>> {
        if name == "array_to_json" {
            // An array as JSON, as to_json writes it; `pretty` (line feeds between the
            // outer elements) only when false.
            crate::bind::function::check_arity(name, args.len(), 1, 2)?;
            let (x, t) = self.expr(&args[0], scope, aggs)?;
            if t == DataType::Unknown {
                return Err(SqlError::new(
                    code::DATATYPE_MISMATCH,
                    "could not determine polymorphic type because input has type unknown",
                ));
            }
            if t.element().is_none() {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function array_to_json({}) does not exist", t.sql_name()),
                )
                .hint("No function matches the given name and argument types. You might need to add explicit type casts."));
            }
            if let Some(pretty) = args.get(1) {
                let (p, pt) = self.expr(pretty, scope, aggs)?;
                let (p, _) = self.coerce(p, pt, DataType::Bool)?;
                if !matches!(p, Expr::Const(Value::Bool(false))) {
                    return Err(SqlError::unsupported("array_to_json(…, pretty) other than false"));
                }
            }
            return self.fold(Func::ToJson(t, false), vec![x], DataType::Json).map(Some);
        }
        let (base, jsonb) = match (name.strip_prefix("jsonb_"), name.strip_prefix("json_")) {
            (Some(rest), _) => (rest, true),
            (None, Some(rest)) => (rest, false),
            _ => match name {
                "to_json" => ("to", false),
                "to_jsonb" => ("to", true),
                _ => return Ok(None),
            },
        };
        let doc_type = if jsonb { DataType::Jsonb } else { DataType::Json };
        let mut bound = Vec::with_capacity(args.len());
        let arity =
            |lo: usize, hi: usize| crate::bind::function::check_arity(name, args.len(), lo, hi);
        match base {
            "to" => arity(1, 1)?,
            "build_object" | "build_array" | "extract_path" | "extract_path_text" => {}
            "typeof" | "array_length" | "strip_nulls" => arity(1, 1)?,
            "pretty" if jsonb => arity(1, 1)?,
            "set" if jsonb => arity(3, 4)?,
            _ => return Ok(None),
        }
        for a in args {
            bound.push(self.expr(a, scope, aggs)?);
        }
        let ty = match base {
            "to" => {
                let (x, t) = bound.pop().expect("one argument");
                let (x, t) = self.coerce(x, t, DataType::Text)?;
                return self.fold(Func::ToJson(t, jsonb), vec![x], doc_type).map(Some);
            }
            "build_object" => {
                if bound.len() % 2 != 0 {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        "argument list must have even number of elements",
                    )
                    .hint(format!(
                        "The arguments of {name}() must consist of alternating keys and values."
                    )));
                }
                let mut out = Vec::with_capacity(bound.len());
                for (i, (x, t)) in bound.into_iter().enumerate() {
                    let (x, t) = self.coerce(x, t, DataType::Text)?;
                    out.push(if i % 2 == 0 {
                        if t.is_string() {
                            x
                        } else {
                            Expr::Cast(Box::new(x), DataType::Text)
                        }
                    } else {
                        as_json(x, t)
                    });
                }
                return self.fold(Func::JsonBuildObject(jsonb), out, doc_type).map(Some);
            }
            "build_array" => {
                let mut out = Vec::with_capacity(bound.len());
                for (x, t) in bound {
                    let (x, t) = self.coerce(x, t, DataType::Text)?;
                    out.push(as_json(x, t));
                }
                return self.fold(Func::JsonBuildArray(jsonb), out, doc_type).map(Some);
            }
            "extract_path" | "extract_path_text" => {
                if bound.is_empty() {
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        format!("function {name}() does not exist"),
                    ));
                }
                let (doc, dt) = bound.remove(0);
                let doc = self.document(name, doc, dt, doc_type)?;
                let mut path = Vec::with_capacity(bound.len());
                for (x, t) in bound {
                    let (x, t) = self.coerce(x, t, DataType::Text)?;
                    if !t.is_string() {
                        return Err(SqlError::new(
                            code::UNDEFINED_FUNCTION,
                            format!(
                                "function {name}({}, {}) does not exist",
                                doc_type.sql_name(),
                                t.sql_name()
                            ),
                        ));
                    }
                    path.push(x);
                }
                let path = Expr::Func(Func::MakeArray, path);
                let (func, ty) = if base == "extract_path" {
                    (JsonFunc::Path, doc_type)
                } else {
                    (JsonFunc::PathText, DataType::Text)
                };
                return self.json_call(func, jsonb, vec![doc, path], ty).map(Some);
            }
            "typeof" => DataType::Text,
            "array_length" => DataType::Int4,
            "pretty" => DataType::Text,
            _ => doc_type, // strip_nulls, set
        };
        let func = match base {
            "typeof" => JsonFunc::Typeof,
            "array_length" => JsonFunc::ArrayLength,
            "pretty" => JsonFunc::Pretty,
            "strip_nulls" => JsonFunc::StripNulls,
            _ => JsonFunc::Set,
        };
        let mut it = bound.into_iter();
        let (doc, dt) = it.next().expect("arity checked");
        let mut out = vec![self.document(name, doc, dt, doc_type)?];
        if func == JsonFunc::Set {
            let (path, pt) = it.next().expect("arity checked");
            let (path, pt) = self.coerce(path, pt, text_array())?;
            let (new, nt) = it.next().expect("arity checked");
            let new = self.document(name, new, nt, DataType::Jsonb)?;
            if pt.element().is_none_or(|e| !e.is_string()) {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function jsonb_set(jsonb, {}, jsonb) does not exist", pt.sql_name()),
                ));
            }
            out.push(path);
            out.push(new);
            if let Some((create, ct)) = it.next() {
                let (create, ct) = self.coerce(create, ct, DataType::Bool)?;
                if ct != DataType::Bool {
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        format!(
                            "function jsonb_set(jsonb, text[], jsonb, {}) does not exist",
                            ct.sql_name()
                        ),
                    ));
                }
                out.push(create);
            }
        }
        self.json_call(func, jsonb, out, ty).map(Some)
    }

    /// A function's document argument: of the function's type (an untyped literal is read
    /// as one).
    fn document(&mut self, name: &str, x: Expr, t: DataType, want: DataType) -> Result<Expr> {
        let (x, t) = self.coerce(x, t, want)?;
        if t != want {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", t.sql_name()),
            )
            .hint("No function matches the given name and argument types. You might need to add explicit type casts."));
        }
        Ok(x)
    }

    /// The set-returning json functions: the expression (the array of their rows) and the row
    /// type; `None` for any other name.
    pub(crate) fn json_srf(
        &mut self,
        name: &str,
        args: &[&ast::Expr],
        scope: &Scope,
    ) -> Result<Option<(Expr, DataType)>> {
        let (func, jsonb) = match name {
            "jsonb_array_elements" => (JsonFunc::ArrayElements, true),
            "json_array_elements" => (JsonFunc::ArrayElements, false),
            "jsonb_array_elements_text" => (JsonFunc::ArrayElementsText, true),
            "json_array_elements_text" => (JsonFunc::ArrayElementsText, false),
            "jsonb_object_keys" => (JsonFunc::ObjectKeys, true),
            "json_object_keys" => (JsonFunc::ObjectKeys, false),
            "jsonb_each" | "json_each" | "jsonb_each_text" | "json_each_text" => {
                return Err(SqlError::unsupported(format!(
                    "{name}() in a select list (its rows are records; call it in FROM)"
                )))
            }
            _ => return Ok(None),
        };
        crate::bind::function::check_arity(name, args.len(), 1, 1)?;
        let doc_type = if jsonb { DataType::Jsonb } else { DataType::Json };
        let (x, t) = self.expr(args[0], scope, false)?;
        let x = self.document(name, x, t, doc_type)?;
        let row = if func == JsonFunc::ArrayElements { doc_type } else { DataType::Text };
        let (e, _) = self.json_call(func, jsonb, vec![x], crate::array::array_of_plain(row))?;
        Ok(Some((e, row)))
    }
}

impl Planner<'_> {
    /// `json(b)_each(_text)(doc)` in FROM: the expressions of its key and value columns
    /// (arrays of the members' keys and values) and the value type; `None` for any other
    /// name.
    pub(crate) fn json_each(
        &mut self,
        name: &str,
        args: &[&ast::Expr],
        scope: &Scope,
    ) -> Result<Option<(Expr, Expr, DataType)>> {
        let (jsonb, text) = match name {
            "jsonb_each" => (true, false),
            "json_each" => (false, false),
            "jsonb_each_text" => (true, true),
            "json_each_text" => (false, true),
            _ => return Ok(None),
        };
        crate::bind::function::check_arity(name, args.len(), 1, 1)?;
        let doc_type = if jsonb { DataType::Jsonb } else { DataType::Json };
        let (x, t) = self.expr(args[0], scope, false)?;
        let x = self.document(name, x, t, doc_type)?;
        let value_type = if text { DataType::Text } else { doc_type };
        let values = if text { JsonFunc::EachValuesText } else { JsonFunc::EachValues };
        let (keys, _) = self.json_call(JsonFunc::EachKeys, jsonb, vec![x.clone()], value_type)?;
        let (values, _) = self.json_call(values, jsonb, vec![x], value_type)?;
        Ok(Some((keys, values, value_type)))
    }
}

impl Planner<'_> {
    /// `json(b)_to_record(doc) AS t(a type, …)` and `json(b)_to_recordset`: one column per
    /// definition, each the array of that key's values in the rows, cast to its type.
    pub(crate) fn json_to_record(
        &mut self,
        name: &str,
        args: &[&ast::Expr],
        alias: Option<&ast::TableAlias>,
        scope: &Scope,
    ) -> Result<Option<(Vec<Expr>, Vec<DataType>)>> {
        let (jsonb, set) = match name {
            "jsonb_to_record" => (true, false),
            "json_to_record" => (false, false),
            "jsonb_to_recordset" => (true, true),
            "json_to_recordset" => (false, true),
            _ => return Ok(None),
        };
        crate::bind::function::check_arity(name, args.len(), 1, 1)?;
        let defined: Vec<&ast::TableAliasColumnDef> =
            alias.map(|a| a.columns.iter().collect()).unwrap_or_default();
        if defined.is_empty() || defined.iter().any(|c| c.data_type.is_none()) {
            return Err(SqlError::syntax(
                "a column definition list is required for functions returning \"record\"",
            ));
        }
        let doc_type = if jsonb { DataType::Jsonb } else { DataType::Json };
        let (x, t) = self.expr(args[0], scope, false)?;
        let x = self.document(name, x, t, doc_type)?;
        let mut exprs = Vec::with_capacity(defined.len());
        let mut types = Vec::with_capacity(defined.len());
        for c in defined {
            let ty = self.data_type(c.data_type.as_ref().expect("checked above"))?;
            let text = !matches!(ty, DataType::Json | DataType::Jsonb);
            let key = Expr::Const(Value::Text(ident(&c.name)));
            let (values, _) = self.json_call(
                JsonFunc::RecordColumn { set, text },
                jsonb,
                vec![x.clone(), key],
                DataType::Text,
            )?;
            exprs.push(Expr::Cast(Box::new(values), crate::array::array_of(ty)?));
            types.push(ty);
        }
        Ok(Some((exprs, types)))
    }
}

/// The JSON SRF names, for [`crate::bind::srf::is_srf`].
pub(crate) fn is_json_srf(name: &str) -> bool {
    matches!(
        name,
        "jsonb_array_elements"
            | "json_array_elements"
            | "jsonb_array_elements_text"
            | "json_array_elements_text"
            | "jsonb_object_keys"
            | "json_object_keys"
            | "jsonb_each"
            | "json_each"
            | "jsonb_each_text"
            | "json_each_text"
            | "jsonb_to_record"
            | "json_to_record"
            | "jsonb_to_recordset"
            | "json_to_recordset"
    )
}
