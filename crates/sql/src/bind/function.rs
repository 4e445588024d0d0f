//! Binding function calls: the function table, arity and argument types, constant folding.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::types::{DataType, Value};

impl<'a> Planner<'a> {
    pub(crate) fn function(
        &mut self,
        f: &ast::Function,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        let name = object_name(&f.name)?;
        if f.over.is_some() {
            return Err(SqlError::unsupported("window functions"));
        }
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (vec![], false, false),
            ast::FunctionArguments::List(list) => {
                let distinct =
                    matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct));
                let mut star = false;
                let mut args = Vec::new();
                for a in &list.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                            args.push(x.clone())
                        }
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        other => {
                            return Err(SqlError::unsupported(format!("the argument {other}")))
                        }
                    }
                }
                (args, distinct, star)
            }
            ast::FunctionArguments::Subquery(q) => {
                if name != "array" {
                    return Err(SqlError::unsupported(format!("{name}(subquery)")));
                }
                let (plan, refs) = self.plan_subquery(q, scope)?;
                return Ok((
                    Expr::Subquery(SubPlan(Arc::new(plan)), SubqueryKind::Array, refs),
                    DataType::Text,
                ));
            }
        };
        let agg = match name.as_str() {
            "count" => Some(AggFunc::Count),
            "sum" => Some(AggFunc::Sum),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "avg" => Some(AggFunc::Avg),
            "string_agg" => {
                let sep = match args.get(1) {
                    Some(ast::Expr::Value(v)) => match &v.value {
                        ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                            s.clone()
                        }
                        _ => {
                            return Err(SqlError::unsupported(
                                "string_agg with a non-text separator",
                            ))
                        }
                    },
                    _ => {
                        return Err(SqlError::unsupported(
                            "string_agg without a constant separator",
                        ))
                    }
                };
                Some(AggFunc::StringAgg(sep))
            }
            _ => None,
        };
        if let Some(agg) = agg {
            if !aggs {
                return Err(SqlError::new(
                    code::GROUPING,
                    "aggregate functions are not allowed here",
                ));
            }
            if star {
                if agg != AggFunc::Count {
                    return Err(SqlError::syntax(format!("{name}(*) is not valid")));
                }
                return Ok((
                    Expr::Agg(AggFunc::Count, false, None, DataType::Int8),
                    DataType::Int8,
                ));
            }
            let args = if matches!(agg, AggFunc::StringAgg(_)) { &args[..1] } else { &args[..] };
            let [arg] = args else {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name} takes exactly one argument"),
                ));
            };
            let (x, ty) = self.expr(arg, scope, false)?;
            let out = match agg {
                AggFunc::StringAgg(_) => DataType::Text,
                AggFunc::Count => DataType::Int8,
                AggFunc::Sum => match ty {
                    DataType::Int2 | DataType::Int4 => DataType::Int8,
                    DataType::Int8 | DataType::Numeric(_) | DataType::Unknown => {
                        DataType::Numeric(None)
                    }
                    DataType::Float4 | DataType::Float8 => DataType::Float8,
                    t => {
                        return Err(SqlError::new(
                            code::UNDEFINED_FUNCTION,
                            format!("function sum({}) does not exist", t.sql_name()),
                        ))
                    }
                },
                AggFunc::Avg => match ty {
                    DataType::Float4 | DataType::Float8 => DataType::Float8,
                    t if t.is_numeric() || t == DataType::Unknown => DataType::Numeric(None),
                    t => {
                        return Err(SqlError::new(
                            code::UNDEFINED_FUNCTION,
                            format!("function avg({}) does not exist", t.sql_name()),
                        ))
                    }
                },
                AggFunc::Min | AggFunc::Max => ty,
            };
            return Ok((Expr::Agg(agg, distinct, Some(Box::new(x)), out), out));
        }
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for a in &args {
            let (x, t) = self.expr(a, scope, aggs)?;
            bound.push(x);
            types.push(t);
        }
        let arity = |n: std::ops::RangeInclusive<usize>| -> Result<()> {
            if n.contains(&args.len()) {
                Ok(())
            } else {
                Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name} with {} arguments does not exist", args.len()),
                )
                .hint("No function matches the given name and argument types."))
            }
        };
        let (func, ty) = match name.as_str() {
            "lower" => (Func::Lower, DataType::Text),
            "upper" => (Func::Upper, DataType::Text),
            "length" | "char_length" | "character_length" => (Func::Length, DataType::Int4),
            "abs" => (Func::Abs, types.first().copied().unwrap_or(DataType::Numeric(None))),
            "coalesce" => (Func::Coalesce, types.iter().fold(DataType::Unknown, |a, b| DataType::common(a, *b))),
            "nullif" => (Func::Nullif, types.iter().fold(DataType::Unknown, |a, b| DataType::common(a, *b))),
            "greatest" => (Func::Greatest, types.iter().fold(DataType::Unknown, |a, b| DataType::common(a, *b))),
            "least" => (Func::Least, types.iter().fold(DataType::Unknown, |a, b| DataType::common(a, *b))),
            "round" => (Func::Round, types.first().copied().unwrap_or(DataType::Numeric(None))),
            "floor" => (Func::Floor, types.first().copied().unwrap_or(DataType::Numeric(None))),
            "ceil" | "ceiling" => (Func::Ceil, types.first().copied().unwrap_or(DataType::Numeric(None))),
            "substr" | "substring" => (Func::Substr, DataType::Text),
            "btrim" => (Func::Trim, DataType::Text),
            "concat" => (Func::Concat, DataType::Text),
            "repeat" => (Func::Repeat, DataType::Text),
            "pg_cancel_backend" => (Func::CancelBackend, DataType::Bool),
            "pg_terminate_backend" => (Func::TerminateBackend, DataType::Bool),
            "pg_sleep" => (Func::Sleep, DataType::Text),
            "now" | "transaction_timestamp" | "statement_timestamp" | "current_timestamp" | "localtimestamp" => {
                (Func::Now, DataType::TimestampTz)
            }
            "current_date" => (Func::CurrentDate, DataType::Date),
            "random" => (Func::Random, DataType::Float8),
            "version" => (Func::Version, DataType::Text),
            "current_database" => (Func::CurrentDatabase, DataType::Text),
            "current_schema" => (Func::CurrentSchema, DataType::Text),
            "current_user" | "session_user" => (Func::CurrentUser, DataType::Text),
            "pg_backend_pid" => (Func::BackendPid, DataType::Int4),
            "kiln_sync" => (Func::KilnSync, DataType::Text),
            "kiln_persist" => (Func::KilnPersist, DataType::Text),
            "kiln_last_txid" => (Func::KilnLastTxid, DataType::Text),
            "kiln_txn_status" => (Func::KilnTxnStatus, DataType::Text),
            "kiln_wait" => (Func::KilnWait, DataType::Text),
            "kiln_fault_fail_syncs" => (Func::KilnFaultFailSyncs, DataType::Text),
            "kiln_fault_panic" => (Func::KilnFaultPanic, DataType::Text),
            "kiln_fault_disk_full" => (Func::KilnFaultDiskFull, DataType::Text),
            "pg_table_is_visible" | "pg_type_is_visible" | "pg_function_is_visible" => (Func::Catalog(CatalogFunc::TableIsVisible), DataType::Bool),
            "pg_get_userbyid" => (Func::Catalog(CatalogFunc::UserById), DataType::Text),
            "format_type" => (Func::Catalog(CatalogFunc::FormatType), DataType::Text),
            "pg_get_expr" => (Func::Catalog(CatalogFunc::GetExpr), DataType::Text),
            "pg_get_indexdef" => (Func::Catalog(CatalogFunc::IndexDef), DataType::Text),
            "pg_get_constraintdef" => (Func::Catalog(CatalogFunc::ConstraintDef), DataType::Text),
            "pg_encoding_to_char" => (Func::Catalog(CatalogFunc::EncodingToChar), DataType::Text),
            "pg_relation_is_publishable" => (Func::Catalog(CatalogFunc::RelationIsPublishable), DataType::Bool),
            "pg_get_statisticsobjdef_columns" => (Func::Catalog(CatalogFunc::StatisticsColumns), DataType::Text),
            "obj_description" | "col_description" | "shobj_description" => (Func::Catalog(CatalogFunc::Description), DataType::Text),
            "current_schemas" => (Func::Catalog(CatalogFunc::CurrentSchemas), DataType::Text),
            "has_table_privilege" | "has_schema_privilege" | "has_database_privilege" => (Func::Catalog(CatalogFunc::HasPrivilege), DataType::Bool),
            "array_to_string" => (Func::ArrayToString, DataType::Text),
            "array_upper" | "array_length" | "cardinality" => (Func::ArrayUpper, DataType::Int4),
            "array_position" => (Func::ArrayPosition, DataType::Int4),
            "quote_ident" => (Func::QuoteIdent, DataType::Text),
            _ => {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name} does not exist"),
                )
                .hint("Kiln supports the common scalar functions, count/sum/min/max/avg and the kiln_* functions."))
            }
        };
        match func {
            Func::Lower
            | Func::Upper
            | Func::Length
            | Func::Abs
            | Func::Floor
            | Func::Ceil
            | Func::Trim => arity(1..=1)?,
            Func::Round => arity(1..=2)?,
            Func::Nullif => arity(2..=2)?,
            Func::Substr => arity(2..=3)?,
            Func::Repeat => arity(2..=2)?,
            Func::CancelBackend | Func::Sleep => arity(1..=1)?,
            Func::TerminateBackend => arity(1..=2)?,
            Func::Coalesce | Func::Greatest | Func::Least | Func::Concat => arity(1..=100)?,
            Func::KilnTxnStatus => arity(1..=1)?,
            Func::KilnWait => arity(1..=2)?,
            Func::KilnFaultFailSyncs | Func::KilnFaultDiskFull => arity(1..=1)?,
            Func::Catalog(_) => arity(0..=4)?,
            Func::ArrayToString | Func::ArrayPosition | Func::ArrayElement => arity(2..=3)?,
            Func::ArrayUpper => arity(1..=2)?,
            Func::QuoteIdent => arity(1..=1)?,
            _ => arity(0..=0)?,
        }
        // Untyped arguments take the type the function wants.
        let mut fixed = Vec::with_capacity(bound.len());
        for (i, (x, t)) in bound.into_iter().zip(types).enumerate() {
            let want = match (func, i) {
                (Func::Substr, 1 | 2)
                | (Func::Repeat, 1)
                | (Func::Round, 1)
                | (Func::KilnWait, 1)
                | (Func::KilnFaultFailSyncs | Func::KilnFaultDiskFull, 0)
                | (Func::ArrayUpper, 1)
                | (Func::ArrayElement, 1) => DataType::Int8,
                (Func::Catalog(_), _) => DataType::Unknown,
                (Func::Abs | Func::Round | Func::Floor | Func::Ceil, 0) => DataType::Numeric(None),
                (Func::Sleep, 0) => DataType::Float8,
                (Func::CancelBackend | Func::TerminateBackend, 0) => DataType::Int4,
                (Func::TerminateBackend, 1) => DataType::Int8,
                (Func::Coalesce | Func::Greatest | Func::Least | Func::Nullif, _) => {
                    fixed.push(self.unify(x, t, ty)?);
                    continue;
                }
                _ => DataType::Text,
            };
            fixed.push(self.coerce(x, t, want)?.0);
        }
        // COALESCE stops at its first non-null constant (so `coalesce(1, x)` is the constant
        // 1, which may fold further, as in PostgreSQL).
        if func == Func::Coalesce {
            let first_constant =
                fixed.iter().position(|a| matches!(a, Expr::Const(v) if !v.is_null()));
            if let Some(i) = first_constant {
                fixed.truncate(i + 1);
                if i == 0 {
                    return Ok((fixed.pop().expect("one argument"), ty));
                }
            }
        }
        // An immutable function of constants is evaluated now, as PostgreSQL folds it (its
        // errors fail the statement at planning, whether or not a row reaches it).
        if func.is_immutable() && fixed.iter().all(|a| matches!(a, Expr::Const(_))) {
            let ctx = crate::expr::Ctx::new(&[], self.env);
            let value = Expr::Func(func, fixed).eval(&[], &ctx)?;
            let value = match (&value, ty) {
                (Value::Int(_), DataType::Int4 | DataType::Int2) => value.cast(ty)?,
                _ => value,
            };
            return Ok((Expr::Const(value), ty));
        }
        Ok((Expr::Func(func, fixed), ty))
    }
}
