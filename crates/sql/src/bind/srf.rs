//! Set-returning functions: `unnest`, `generate_subscripts` and `generate_series`, as a
//! whole select-list item (the row repeats once per element) or as a FROM item.

use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::plan::{CallRows, FromItem, JoinKind, Source};
use crate::types::DataType;

/// The unnamed arguments of a call (`None` when it is not a plain call).
fn call_args(f: &ast::Function) -> Result<Vec<&ast::Expr>> {
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(SqlError::unsupported(format!("{}", f.name)));
    };
    if !list.clauses.is_empty() || list.duplicate_treatment.is_some() || f.filter.is_some() {
        return Err(SqlError::unsupported(format!("this call of {}", f.name)));
    }
    list.args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Ok(x),
            other => Err(SqlError::unsupported(format!("the argument {other}"))),
        })
        .collect()
}

/// A function's name without the system schemas' prefixes.
pub(crate) fn function_name(name: &str) -> String {
    let name = name.strip_prefix("pg_catalog.").unwrap_or(name);
    name.strip_prefix("information_schema.").unwrap_or(name).to_string()
}

/// Whether the name is a set-returning function Kiln has.
pub(crate) fn is_srf(name: &str) -> bool {
    matches!(
        name,
        "unnest"
            | "generate_subscripts"
            | "generate_series"
            | "pg_partition_ancestors"
            | "pg_options_to_table"
            | "pg_get_keywords"
            | "_pg_expandarray"
            | "regexp_matches"
            | "regexp_split_to_table"
            | "string_to_table"
    ) || crate::bind::json::is_json_srf(name)
}

impl<'a> Planner<'a> {
    /// A set-returning call with arguments already bound: the expression (which evaluates to
    /// the array of its rows) and the type of each row.
    pub(crate) fn srf_call(
        &mut self,
        name: &str,
        args: &[&ast::Expr],
        scope: &Scope,
    ) -> Result<(Expr, DataType)> {
        if let Some(bound) = self.json_srf(name, args, scope)? {
            return Ok(bound);
        }
        let arity = |lo, hi| crate::bind::function::check_arity(name, args.len(), lo, hi);
        match name {
            "jsonb_to_record" | "json_to_record" | "jsonb_to_recordset" | "json_to_recordset" => {
                Err(SqlError::syntax(
                    "a column definition list is required for functions returning \"record\"",
                ))
            }
            "pg_options_to_table" | "pg_get_keywords" => Err(SqlError::unsupported(format!(
                "{name}() in a select list (its rows are records; call it in FROM)"
            ))),
            "unnest" => {
                arity(1, 1)?;
                let (a, t) = self.expr(args[0], scope, false)?;
                let Some(elem) = t.element() else {
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        format!("function unnest({}) does not exist", t.sql_name()),
                    )
                    .hint(
                        "unnest takes an array; cast an untyped literal, as in '{1,2}'::int[].",
                    ));
                };
                Ok((Expr::Func(Func::Unnest, vec![a]), elem))
            }
            "regexp_matches" => {
                arity(2, 3)?;
                let mut bound = Vec::with_capacity(args.len());
                for a in args {
                    let (x, t) = self.expr(a, scope, false)?;
                    bound.push(self.coerce(x, t, DataType::Text)?.0);
                }
                let row = crate::array::array_of(DataType::Text)?;
                Ok((Expr::Func(Func::Str(StrFunc::RegexpMatches), bound), row))
            }
            // The rows of the array its `_array` sibling makes.
            "regexp_split_to_table" | "string_to_table" => {
                let array = match name {
                    "regexp_split_to_table" => "pg_catalog.regexp_split_to_array",
                    _ => "pg_catalog.string_to_array",
                };
                let (e, _) = self.scalar_call_in_from(array, args, scope)?;
                Ok((e, DataType::Text))
            }
            // The relation, then its parent, … (from the partitions of the database).
            "pg_partition_ancestors" => {
                arity(1, 1)?;
                // Its argument is a regclass: a relation's name or OID.
                let (x, t) = self.reg_cast(crate::bind::reg::Reg::Class, args[0], scope, false)?;
                let (x, _) = self.coerce(x, t, DataType::Int8)?;
                self.reusable = false;
                let tables = self.catalog.tables(self.txn, self.db)?;
                let oid_of = |name: &str| {
                    tables
                        .iter()
                        .find(|t| t.name == name)
                        .map(|t| crate::pg::system::oid::object(t.id))
                };
                let (mut children, mut parents) = (Vec::new(), Vec::new());
                for t in &tables {
                    if let Some(parent) = t.partition_of.as_ref().and_then(|o| oid_of(&o.parent)) {
                        children.push(Value::Int(crate::pg::system::oid::object(t.id)));
                        parents.push(Value::Int(parent));
                    }
                }
                let arrays = [Value::Array(children), Value::Array(parents)].map(Expr::Const);
                let [c, p] = arrays;
                Ok((Expr::Func(Func::PartitionAncestors, vec![x, c, p]), DataType::Oid))
            }
            // information_schema._pg_expandarray(a): (element, position) records.
            "_pg_expandarray" => {
                arity(1, 1)?;
                let (a, t) = self.expr(args[0], scope, false)?;
                let Some(elem) = t.element() else {
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        format!("function _pg_expandarray({}) does not exist", t.sql_name()),
                    ));
                };
                let DataType::Array(e) = crate::array::array_of(elem)? else {
                    return Err(SqlError::new(code::INTERNAL, "array_of gave no array"));
                };
                Ok((Expr::Func(Func::ExpandArray, vec![a]), DataType::ExpandedElement(e)))
            }
            "generate_subscripts" => {
                arity(2, 3)?;
                let (a, t) = self.expr(args[0], scope, false)?;
                if t.element().is_none() {
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        format!("function generate_subscripts({}) does not exist", t.sql_name()),
                    ));
                }
                let (d, dt) = self.expr(args[1], scope, false)?;
                let mut bound = vec![a, self.coerce(d, dt, DataType::Int4)?.0];
                match args.get(2) {
                    Some(r) => {
                        let (r, rt) = self.expr(r, scope, false)?;
                        bound.push(self.coerce(r, rt, DataType::Bool)?.0);
                    }
                    None => bound.push(Expr::Const(Value::Bool(false))),
                }
                // int2vector and oidvector (pg_index.indkey, …) are subscripted from 0.
                let from_zero = matches!(t, DataType::Int2Vector | DataType::OidVector);
                bound.push(Expr::Const(Value::Bool(from_zero)));
                Ok((Expr::Func(Func::GenerateSubscripts, bound), DataType::Int4))
            }
            _ => {
                arity(2, 3)?;
                // generate_series(start, stop, interval) of timestamps: the typed bound's
                // type (a date's is timestamptz, as PostgreSQL resolves it).
                let mut typed = Vec::with_capacity(args.len());
                for a in args.iter().take(2) {
                    typed.push(self.expr(a, scope, false)?);
                }
                let temporal = typed.iter().map(|(_, t)| *t).find(|t| {
                    matches!(t, DataType::Timestamp(_) | DataType::TimestampTz(_) | DataType::Date)
                });
                if let Some(t) = temporal {
                    let ty = if matches!(t, DataType::Timestamp(_)) {
                        DataType::Timestamp(None)
                    } else {
                        DataType::TimestampTz(None)
                    };
                    let Some(step) = args.get(2) else {
                        return Err(SqlError::new(
                            code::UNDEFINED_FUNCTION,
                            format!("function generate_series({0}, {0}) does not exist", t.sql_name()),
                        )
                        .hint("A series of timestamps takes a step: generate_series(start, stop, interval)."));
                    };
                    let mut bound = Vec::with_capacity(3);
                    for (x, xt) in typed {
                        let (x, xt) = self.coerce(x, xt, ty)?;
                        bound.push(match xt {
                            _ if xt == ty => x,
                            DataType::Date | DataType::Timestamp(_) | DataType::TimestampTz(_) => {
                                Expr::Cast(Box::new(x), ty)
                            }
                            other => {
                                return Err(SqlError::new(
                                    code::UNDEFINED_FUNCTION,
                                    format!(
                                        "function generate_series({}, {}, interval) does not exist",
                                        t.sql_name(),
                                        other.sql_name()
                                    ),
                                ))
                            }
                        });
                    }
                    let (x, xt) = self.expr(step, scope, false)?;
                    let (x, xt) = self.coerce(x, xt, DataType::Interval(None))?;
                    if !matches!(xt, DataType::Interval(_)) {
                        return Err(SqlError::new(
                            code::UNDEFINED_FUNCTION,
                            format!(
                                "function generate_series({0}, {0}, {1}) does not exist",
                                t.sql_name(),
                                xt.sql_name()
                            ),
                        ));
                    }
                    bound.push(x);
                    return Ok((Expr::Func(Func::GenerateSeries, bound), ty));
                }
                let mut typed = Vec::with_capacity(args.len());
                for a in args {
                    typed.push(self.expr(a, scope, false)?);
                }
                // generate_series(int4 | int8 | numeric, …): the widest of the
                // arguments' types, untyped literals taking the integers' form.
                let numeric = typed.iter().any(|(_, t)| matches!(t, DataType::Numeric(_)));
                let target = if numeric { DataType::Numeric(None) } else { DataType::Int8 };
                let mut bound = Vec::with_capacity(typed.len());
                let mut types = Vec::with_capacity(typed.len());
                let mut ty = if numeric { DataType::Numeric(None) } else { DataType::Int4 };
                for (x, t) in typed {
                    let (x, t) = self.coerce(x, t, target)?;
                    types.push(t);
                    if !t.is_integer() && !matches!(t, DataType::Numeric(_)) {
                        continue;
                    }
                    if t == DataType::Int8 && !numeric {
                        ty = DataType::Int8;
                    }
                    bound.push(match t {
                        DataType::Numeric(_) | DataType::Int8 => x,
                        _ if numeric => Expr::Cast(Box::new(x), DataType::Numeric(None)),
                        _ => x,
                    });
                }
                if bound.len() != types.len() {
                    let names: Vec<String> = types.iter().map(|t| t.sql_name()).collect();
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        format!("function generate_series({}) does not exist", names.join(", ")),
                    )
                    .hint("generate_series takes integers, numerics, or timestamps with an interval step."));
                }
                Ok((Expr::Func(Func::GenerateSeries, bound), ty))
            }
        }
    }

    /// `FROM unnest(a [, b …]) [WITH ORDINALITY] [AS t(x, …)]` or
    /// `FROM generate_subscripts(a, d)`: one column per array (named after the alias
    /// when there is one array, as PostgreSQL does), then the ordinality.
    pub(crate) fn srf_from_item(
        &mut self,
        name: &str,
        args: &[&ast::Expr],
        alias: Option<&ast::TableAlias>,
        ordinality: bool,
        offset: usize,
        earlier: &Scope,
    ) -> Result<(FromItem, Vec<ScopeCol>)> {
        // The call sees the earlier FROM items' columns (it is LATERAL, as in PostgreSQL):
        // the executor evaluates it again for each of their rows.
        let scope = earlier;
        let mut exprs = Vec::new();
        let mut types = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        let mut record = None;
        if let Some((columns, column_types)) = self.json_to_record(name, args, alias, scope)? {
            // json(b)_to_record(set): the columns the definition list gives.
            exprs = columns;
            types = column_types;
            record = alias.map(|a| a.columns.iter().map(|c| ident(&c.name)).collect::<Vec<_>>());
        } else if let Some((keys, values, value_type)) = self.json_each(name, args, scope)? {
            // json(b)_each(_text): a key column and a value column.
            exprs = vec![keys, values];
            types = vec![DataType::Text, value_type];
            names = vec!["key", "value"];
        } else if name == "pg_options_to_table" {
            // Options as `name=value` texts (reloptions, …): a name and a value column.
            crate::bind::function::check_arity(name, args.len(), 1, 1)?;
            let (x, t) = self.expr(args[0], scope, false)?;
            let (x, _) = self.coerce(x, t, DataType::Array(&DataType::Text))?;
            exprs = vec![
                Expr::Func(Func::OptionsToTable(false), vec![x.clone()]),
                Expr::Func(Func::OptionsToTable(true), vec![x]),
            ];
            types = vec![DataType::Text, DataType::Text];
            names = vec!["option_name", "option_value"];
        } else if function_name(name) == "pg_partition_ancestors" {
            let (e, t) = self.srf_call("pg_partition_ancestors", args, scope)?;
            exprs.push(e);
            types.push(t);
            names = vec!["relid"];
        } else if function_name(name) == "pg_get_keywords" {
            // PostgreSQL's keyword list: constant columns, one row per keyword.
            crate::bind::function::check_arity(name, args.len(), 0, 0)?;
            use crate::pg::keywords::{category_description, KEYWORDS};
            let column = |f: &dyn Fn(&(&str, char, bool)) -> Value| {
                Expr::Const(Value::Array(KEYWORDS.iter().map(f).collect()))
            };
            let text = |s: &str| Value::Text(s.to_string());
            let bare = |b: bool| if b { "can be bare label" } else { "requires AS" };
            exprs = vec![
                column(&|k| text(k.0)),
                column(&|k| text(&k.1.to_string())),
                column(&|k| Value::Bool(k.2)),
                column(&|k| text(category_description(k.1))),
                column(&|k| text(bare(k.2))),
            ];
            types = vec![
                DataType::Text,
                DataType::PgChar,
                DataType::Bool,
                DataType::Text,
                DataType::Text,
            ];
            names = vec!["word", "catcode", "barelabel", "catdesc", "baredesc"];
        } else if name == "unnest" {
            if args.is_empty() {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    "function unnest() does not exist",
                ));
            }
            for a in args {
                let (e, t) = self.srf_call("unnest", &[*a], scope)?;
                exprs.push(e);
                types.push(t);
            }
        } else if is_srf(&function_name(name)) {
            let (e, t) = self.srf_call(name, args, scope)?;
            exprs.push(e);
            types.push(t);
        } else {
            // A function that returns one value gives one row (PostgreSQL's rule for any
            // function in FROM): its value, as the one element of the row array.
            let (e, t) = self.scalar_call_in_from(name, args, scope)?;
            exprs.push(Expr::Func(Func::MakeArray, vec![e]));
            types.push(t);
        }
        let name = name.rsplit('.').next().unwrap_or(name);
        let alias_name = alias.map(|a| ident(&a.name)).unwrap_or_else(|| name.to_string());
        let rename: Vec<String> =
            alias.map(|a| a.columns.iter().map(|c| ident(&c.name)).collect()).unwrap_or_default();
        let width = types.len() + usize::from(ordinality);
        crate::bind::query::check_rename(Some(&alias_name), rename.len(), width)?;
        let mut cols = Vec::with_capacity(width);
        for (i, t) in types.iter().enumerate() {
            // A function's named result column keeps its name; otherwise one array under an
            // alias takes the alias as its column name.
            let out_name = matches!(
                name,
                "jsonb_array_elements"
                    | "json_array_elements"
                    | "jsonb_array_elements_text"
                    | "json_array_elements_text"
            );
            let default = if let Some(n) = record.as_ref().and_then(|r| r.get(i)) {
                n.clone()
            } else if let Some(n) = names.get(i) {
                n.to_string()
            } else if out_name {
                "value".to_string()
            } else if types.len() == 1 && alias.is_some() {
                alias_name.clone()
            } else {
                name.to_string()
            };
            let name = rename.get(i).cloned().unwrap_or(default);
            cols.push(ScopeCol {
                system: false,
                table: Some(alias_name.clone()),
                name,
                ty: *t,
                origin: None,
            });
        }
        if ordinality {
            let name = rename.get(types.len()).cloned().unwrap_or_else(|| "ordinality".into());
            cols.push(ScopeCol {
                system: false,
                table: Some(alias_name.clone()),
                name,
                ty: DataType::Int8,
                origin: None,
            });
        }
        let item = FromItem {
            source: Source::Unnest(exprs, ordinality),
            offset,
            width,
            join: JoinKind::Inner,
            on: vec![],
            filters: vec![],
            label: name.to_string(),
        };
        Ok((item, cols))
    }

    /// A call of a function made with CREATE FUNCTION in FROM (`FROM f(1) AS t(a, b)`):
    /// its rows — a set's, or the one row of a value or of columns — with the columns its
    /// shape names (a value's column takes the alias when there is one, as in PostgreSQL).
    pub(crate) fn routine_from_item(
        &mut self,
        call: &ast::Function,
        alias: Option<&ast::TableAlias>,
        ordinality: bool,
        offset: usize,
        earlier: &Scope,
    ) -> Result<Option<(FromItem, Vec<ScopeCol>)>> {
        // The call sees the earlier FROM items' columns (LATERAL, as in PostgreSQL).
        let Some((e, shape)) = self.routine_rows(call, earlier)? else { return Ok(None) };
        let name = crate::bind::name_as_written(&call.name)?;
        let name = name.rsplit('.').next().unwrap_or(&name).to_string();
        let alias_name = alias.map(|a| ident(&a.name)).unwrap_or_else(|| name.clone());
        let rename: Vec<String> =
            alias.map(|a| a.columns.iter().map(|c| ident(&c.name)).collect()).unwrap_or_default();
        let columns: Vec<(String, DataType)> = match (&shape.columns, shape.value) {
            (Some(c), _) => c.clone(),
            (None, Some(t)) => {
                let named_out = shape.column != crate::catalog::unqualified(&name);
                let n = if alias.is_some() && !named_out {
                    alias_name.clone()
                } else {
                    shape.column.clone()
                };
                vec![(n, t)]
            }
            // A void function gives one row of one empty value.
            (None, None) => vec![(shape.column.clone(), DataType::Unknown)],
        };
        let width = columns.len() + usize::from(ordinality);
        crate::bind::query::check_rename(Some(&alias_name), rename.len(), width)?;
        let mut cols = Vec::with_capacity(width);
        let ordinal = ordinality.then(|| ("ordinality".to_string(), DataType::Int8));
        for (i, (n, t)) in columns.iter().cloned().chain(ordinal).enumerate() {
            cols.push(ScopeCol {
                system: false,
                table: Some(alias_name.clone()),
                name: rename.get(i).cloned().unwrap_or(n),
                ty: t,
                origin: None,
            });
        }
        let rows = CallRows {
            set: shape.set,
            columns: shape.columns.is_some(),
            width: columns.len(),
            ordinality,
        };
        let item = FromItem {
            source: Source::Call(Box::new(e), rows),
            offset,
            width,
            join: JoinKind::Inner,
            on: vec![],
            filters: vec![],
            label: name,
        };
        Ok(Some((item, cols)))
    }

    /// A call of a function that returns one value, named in FROM (`FROM current_schema()`,
    /// `FROM upper($1) AS u`), bound as the same call in a select list would be.
    fn scalar_call_in_from(
        &mut self,
        name: &str,
        args: &[&ast::Expr],
        scope: &Scope,
    ) -> Result<(Expr, DataType)> {
        let call = ast::Expr::Function(ast::Function {
            name: ast::ObjectName::from(
                name.split('.').map(|p| ast::Ident::with_quote('"', p)).collect::<Vec<_>>(),
            ),
            uses_odbc_syntax: false,
            parameters: ast::FunctionArguments::None,
            args: ast::FunctionArguments::List(ast::FunctionArgumentList {
                duplicate_treatment: None,
                args: args
                    .iter()
                    .map(|a| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr((*a).clone())))
                    .collect(),
                clauses: vec![],
            }),
            within_group: vec![],
            filter: None,
            null_treatment: None,
            over: None,
        });
        self.expr(&call, scope, false)
    }

    /// A select item that is a set-returning call: its expression, row type and output
    /// name. `None` for any other item.
    pub(crate) fn select_list_srf(
        &mut self,
        x: &ast::Expr,
        scope: &Scope,
    ) -> Result<Option<(Expr, DataType, String)>> {
        let x = match x {
            ast::Expr::Nested(inner) => inner.as_ref(),
            x => x,
        };
        // `(_pg_expandarray(a)).x` / `.n`: the elements / their positions.
        if let ast::Expr::CompoundFieldAccess { root, access_chain } = x {
            let root = match root.as_ref() {
                ast::Expr::Nested(inner) => inner.as_ref(),
                r => r,
            };
            if let (ast::Expr::Function(f), [ast::AccessExpr::Dot(ast::Expr::Identifier(field))]) =
                (root, access_chain.as_slice())
            {
                if function_name(&crate::bind::name_as_written(&f.name)?) == "_pg_expandarray" {
                    let args = call_args(f)?;
                    let field = ident(field);
                    let (e, t) = match field.as_str() {
                        "x" => self.srf_call("unnest", &args, scope)?,
                        "n" => {
                            let one = ast::Expr::value(ast::Value::Number("1".into(), false));
                            let mut with_dim = args.clone();
                            with_dim.push(&one);
                            let (mut e, t) =
                                self.srf_call("generate_subscripts", &with_dim, scope)?;
                            // Positions count from 1, even in a vector subscripted from 0.
                            if let Expr::Func(Func::GenerateSubscripts, args) = &mut e {
                                args[3] = Expr::Const(Value::Bool(false));
                            }
                            (e, t)
                        }
                        other => {
                            return Err(SqlError::new(
                                code::UNDEFINED_COLUMN,
                                format!("column \"{other}\" not found in data type record"),
                            ))
                        }
                    };
                    return Ok(Some((e, t, field)));
                }
            }
            return Ok(None);
        }
        // `generate_series(…)::date`: the set's values cast, one by one.
        if let ast::Expr::Cast { expr, data_type, format: None, .. } = x {
            if crate::bind::reg::reg_kind(data_type).is_some()
                || crate::bind::domain_named(data_type, self.catalog, self.txn, self.db)?.is_some()
            {
                return Ok(None);
            }
            let Some((e, t, name)) = self.select_list_srf(expr, scope)? else { return Ok(None) };
            let ty = self.data_type(data_type)?;
            if t == ty {
                return Ok(Some((e, t, name)));
            }
            if (t.is_enum() && !ty.is_string()) || (ty.is_enum() && !t.is_string()) {
                return Err(SqlError::new(
                    code::CANNOT_COERCE,
                    format!("cannot cast type {} to {}", t.sql_name(), ty.sql_name()),
                ));
            }
            let array = crate::array::array_of(ty)?;
            return Ok(Some((Expr::Cast(Box::new(e), array), ty, name)));
        }
        let ast::Expr::Function(f) = x else { return Ok(None) };
        let name = crate::bind::name_as_written(&f.name)?;
        let name = function_name(&name);
        if !is_srf(&name) || f.over.is_some() {
            return Ok(None);
        }
        let args = call_args(f)?;
        let (e, t) = self.srf_call(&name, &args, scope)?;
        Ok(Some((e, t, name)))
    }
}
