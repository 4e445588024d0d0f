//! Triggers and their PL/pgSQL functions.
//!
//! `CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$ … $$` stores a function (its
//! body is read, so a syntax error fails the CREATE); `CREATE TRIGGER` attaches it to a table
//! (`catalog::Trigger`, kept in the table's definition, so a plan of a write to the table is
//! bound again when its triggers change).
//!
//! **Firing.** A statement's [`Writer`] fires them as PostgreSQL does: BEFORE STATEMENT
//! triggers first; for each row, the BEFORE ROW triggers in name order, each seeing the row
//! as the ones before it left it and able to change it (`NEW.col := …; RETURN NEW`) or skip
//! it (`RETURN NULL`); then the row is written and checked; the AFTER ROW triggers of every
//! row written run when the statement's rows are all written, then AFTER STATEMENT ones.
//! `UPDATE OF cols` fires for an UPDATE that sets one of the columns; `WHEN (cond)` is
//! checked before the function is called. Rows a foreign key's CASCADE, SET NULL or SET
//! DEFAULT changes fire the row triggers of their table; COPY fires row triggers.
//!
//! **The function's program.** A function is bound once per statement and trigger: every
//! expression and SQL statement in it is planned as a query whose parameters are the
//! trigger's frame — `NEW`'s columns, `OLD`'s columns, `TG_OP` and the other `TG_`
//! variables, `FOUND`, and the declared variables — with each reference to one of them
//! rewritten into its parameter (PL/pgSQL's own approach), so conditions may hold
//! subqueries and statements read and write other tables in the same transaction. SQL
//! statements a function runs are statements of their own: their AFTER triggers and NO
//! ACTION checks run when they end. Trigger calls nest at most [`DEPTH_MAX`] deep (54001
//! past that: a trigger whose statements fire it again).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use sqlparser::ast;

use crate::bind::dml::{plan_delete, plan_insert, plan_update, DeletePlan, InsertPlan, UpdatePlan};
use crate::bind::{name_as_written, object_name, Planner};
use crate::catalog::{Function, Table, Trigger};
use crate::error::{code, Result, SqlError};
use crate::exec::constraints::NoSystemTables;
use crate::exec::init::InitPlans;
use crate::exec::select::{execute_select, Exec};
use crate::exec::write::Writer;
use crate::expr::{assign, Ctx, Env};
use crate::parse::do_block::{
    self, refused_in_function as refused, FunctionBody, Level, Raise, Stmt,
};
use crate::parse::trigger::CreateTrigger;
use crate::plan::SelectPlan;
use crate::prepared::Dependencies;
use crate::session::{raise_notice, Notice, Output};
use crate::types::{DataType, Value};

/// How deep trigger calls nest (a trigger's statement firing a trigger, …).
pub(crate) const DEPTH_MAX: usize = 32;

/// What a statement does to a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    Insert,
    Update,
    Delete,
}

impl Event {
    fn name(self) -> &'static str {
        match self {
            Event::Insert => "INSERT",
            Event::Update => "UPDATE",
            Event::Delete => "DELETE",
        }
    }
}

/// What wrote a row whose AFTER triggers are queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The statement itself.
    Statement,
    /// A foreign key's CASCADE, SET NULL or SET DEFAULT.
    Action,
}

/// The variables every trigger function has, after `NEW`'s and `OLD`'s columns.
const TG_VARS: &[&str] = &[
    "tg_op",
    "tg_name",
    "tg_when",
    "tg_level",
    "tg_table_name",
    "tg_table_schema",
    "tg_relname",
    "tg_nargs",
    "tg_argv",
    "found",
];
const FOUND: usize = 9;

fn tg_type(k: usize) -> DataType {
    match TG_VARS[k] {
        "tg_nargs" => DataType::Int4,
        "tg_argv" => DataType::Array(&DataType::Text),
        "found" => DataType::Bool,
        _ => DataType::Text,
    }
}

/// How many bound trigger programs the server keeps (all are dropped past it; each is bound
/// again at its next use).
const KEPT_PROGRAMS_MAX: usize = 4096;

/// A bound program kept for later statements (`Database::trigger_programs`).
pub(crate) struct KeptProgram {
    /// The function's body it was bound from.
    body: String,
    /// What its binding depended on.
    deps: Dependencies,
    program: Arc<Program>,
}

/// AFTER ROW triggers' pending calls of one statement.
#[derive(Default)]
pub(crate) struct Pending {
    rows: Vec<AfterRow>,
}

struct AfterRow {
    table: Arc<Table>,
    event: Event,
    new: Option<Vec<Value>>,
    old: Option<Vec<Value>>,
    set: Option<Vec<usize>>,
    /// Written by a foreign key's action rather than by the statement itself.
    cascaded: bool,
}

/// The trigger state of one statement's writer.
#[derive(Default)]
pub(crate) struct TriggerState {
    /// Bound programs, by trigger id.
    programs: HashMap<u64, Arc<Program>>,
    /// How deep trigger calls nest now.
    depth: usize,
    /// AFTER ROW calls waiting for the end of the statement.
    pending: Pending,
}

/// A one-column query: an expression of the frame.
#[derive(Clone)]
struct Query {
    plan: Box<SelectPlan>,
    ty: DataType,
}

/// A trigger function bound to one trigger of one table.
pub(crate) struct Program {
    /// The table's column count (`NEW` and `OLD` each take that many slots).
    width: usize,
    /// How many slots its frame has (the loop variables' last).
    slots: usize,
    /// The declared variables: slot, type, initial value, NOT NULL.
    declared: Vec<(usize, DataType, Option<Query>, bool)>,
    /// The trigger's WHEN condition.
    when: Option<Query>,
    /// The body.
    body: Vec<Step>,
}

enum Step {
    Assign {
        slot: usize,
        ty: DataType,
        value: Query,
        not_null: bool,
    },
    If(Vec<(Query, Vec<Step>)>, Vec<Step>),
    Raise {
        raise: Raise,
        params: Vec<Query>,
        using: Vec<Query>,
    },
    Assert(Query, Option<Query>),
    Perform(Box<SelectPlan>),
    SelectInto {
        plan: Box<SelectPlan>,
        targets: Vec<(usize, DataType)>,
    },
    Insert(Box<InsertPlan>),
    Update(Box<UpdatePlan>),
    Delete(Box<DeletePlan>),
    Return(Returned),
    Block(Vec<Step>),
    /// `[WHILE condition] LOOP … END LOOP`.
    Loop {
        condition: Option<Query>,
        body: Vec<Step>,
    },
    /// `FOR var IN [REVERSE] low .. high [BY step] LOOP … END LOOP`.
    ForRange {
        slot: usize,
        low: Query,
        high: Query,
        step: Option<Query>,
        reverse: bool,
        body: Vec<Step>,
    },
    /// `EXIT` (true) or `CONTINUE` (false), `[WHEN condition]`.
    Exit {
        exit: bool,
        condition: Option<Query>,
    },
    /// `GET DIAGNOSTICS var = ROW_COUNT, …`: the variables' slots and types.
    GetDiagnostics(Vec<(usize, DataType)>),
}

#[derive(Clone, Copy, PartialEq)]
enum Returned {
    New,
    Old,
    Null,
    /// `COALESCE(NEW, OLD)`
    NewOrOld,
    /// `COALESCE(OLD, NEW)`
    OldOrNew,
}

/// What `RETURN e` returns, for the records a trigger function can return.
fn returned_record(e: &str) -> Option<Returned> {
    let words: String = e.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_lowercase();
    Some(match words.as_str() {
        "new" => Returned::New,
        "old" => Returned::Old,
        "null" => Returned::Null,
        "coalesce(new,old)" => Returned::NewOrOld,
        "coalesce(old,new)" => Returned::OldOrNew,
        _ => return None,
    })
}

enum Flow {
    Next,
    Return(Returned),
    /// EXIT: out of the innermost loop.
    Exit,
    /// CONTINUE: to the innermost loop's next iteration.
    Continue,
}

/// The names a function's code can refer to, and their slots.
struct Frame<'t> {
    table: &'t Table,
    /// Declared variables: name, slot, constant.
    vars: Vec<(String, usize, bool)>,
    types: Vec<DataType>,
    /// The slots of variables declared NOT NULL.
    not_null: Vec<usize>,
    /// What the program's binding depended on (when it may be used again).
    deps: Dependencies,
    /// Whether `NEW` / `OLD` were referred to (WHEN's checks).
    used_new: bool,
    used_old: bool,
}

impl Frame<'_> {
    fn width(&self) -> usize {
        self.table.columns.len()
    }

    fn tg_slot(&self, k: usize) -> usize {
        2 * self.width() + k
    }

    /// A declared variable's slot and whether it is CONSTANT.
    fn declared(&self, name: &str) -> Option<(usize, bool)> {
        // The innermost (a FOR loop's variable hides a declared one of its name).
        let found = self.vars.iter().rev().find(|(n, _, _)| n == name);
        found.map(|(_, slot, constant)| (*slot, *constant))
    }

    /// The slot of a one-part name: a declared variable, or a `TG_` variable.
    fn var(&self, name: &str) -> Option<usize> {
        if let Some((slot, _)) = self.declared(name) {
            return Some(slot);
        }
        TG_VARS.iter().position(|v| *v == name).map(|k| self.tg_slot(k))
    }

    /// The slot of `NEW.col` / `OLD.col`.
    fn field(&mut self, record: &str, col: &str) -> Result<usize> {
        let Some(i) = self.table.columns.iter().position(|c| c.name == col) else {
            return Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("record \"{record}\" has no field \"{col}\""),
            ));
        };
        if record == "new" {
            self.used_new = true;
            Ok(i)
        } else {
            self.used_old = true;
            Ok(self.width() + i)
        }
    }

    fn placeholder(slot: usize) -> ast::Expr {
        ast::Expr::Value(ast::Value::Placeholder(format!("${}", slot + 1)).into())
    }

    /// Rewrites the references to the frame's names in a statement into parameters.
    fn rewrite(&mut self, stmt: &mut ast::Statement) -> Result<()> {
        self.expand_records(stmt)?;
        let argv = self.tg_slot(TG_VARS.iter().position(|v| *v == "tg_argv").expect("listed"));
        let flow = ast::visit_expressions_mut(stmt, |e| {
            match self.rewritten(e, argv) {
                Ok(Some(new)) => *e = new,
                Ok(None) => {}
                Err(err) => return ControlFlow::Break(err),
            }
            ControlFlow::Continue(())
        });
        match flow {
            ControlFlow::Break(e) => Err(e),
            ControlFlow::Continue(()) => Ok(()),
        }
    }

    /// The whole-row uses of `NEW` and `OLD` that name their columns, written out column by
    /// column: `NEW.*` in a select list or a VALUES row, and `to_jsonb(NEW)`, `to_json(NEW)`,
    /// `row_to_json(NEW)` (an object of the columns, as PostgreSQL builds for a record).
    fn expand_records(&mut self, stmt: &mut ast::Statement) -> Result<()> {
        let columns: Vec<String> = self.table.columns.iter().map(|c| c.name.clone()).collect();
        let record_of = |name: &ast::ObjectName| match name.0.as_slice() {
            [ast::ObjectNamePart::Identifier(i)] => {
                let n = crate::bind::ident(i);
                (n == "new" || n == "old").then_some(n)
            }
            _ => None,
        };
        let fields = |record: &str| -> Vec<ast::Expr> {
            columns
                .iter()
                .map(|c| {
                    ast::Expr::CompoundIdentifier(vec![
                        ast::Ident::new(record),
                        ast::Ident::with_quote('"', c.clone()),
                    ])
                })
                .collect()
        };
        let query = match stmt {
            ast::Statement::Query(q) => Some(q.as_mut()),
            ast::Statement::Insert(ins) => ins.source.as_deref_mut(),
            _ => None,
        };
        if let Some(q) = query {
            match q.body.as_mut() {
                ast::SetExpr::Select(sel) => {
                    let mut items = Vec::with_capacity(sel.projection.len());
                    for item in std::mem::take(&mut sel.projection) {
                        let record = match &item {
                            ast::SelectItem::QualifiedWildcard(
                                ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                                _,
                            ) => record_of(n),
                            _ => None,
                        };
                        match record {
                            Some(r) => items
                                .extend(fields(&r).into_iter().map(ast::SelectItem::UnnamedExpr)),
                            None => items.push(item),
                        }
                    }
                    sel.projection = items;
                }
                ast::SetExpr::Values(values) => {
                    for row in &mut values.rows {
                        let mut out = Vec::with_capacity(row.len());
                        for e in std::mem::take(&mut row.content) {
                            match &e {
                                ast::Expr::QualifiedWildcard(n, _) if record_of(n).is_some() => {
                                    out.extend(fields(&record_of(n).expect("matched")))
                                }
                                _ => out.push(e),
                            }
                        }
                        row.content = out;
                    }
                }
                _ => {}
            }
        }
        let flow = ast::visit_expressions_mut(stmt, |e| {
            let ast::Expr::Function(f) = e else { return ControlFlow::Continue(()) };
            let name = f.name.to_string().to_lowercase();
            if !matches!(name.as_str(), "to_jsonb" | "to_json" | "row_to_json") {
                return ControlFlow::Continue(());
            }
            let ast::FunctionArguments::List(list) = &f.args else {
                return ControlFlow::Continue(());
            };
            let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Identifier(i)))] =
                list.args.as_slice()
            else {
                return ControlFlow::Continue(());
            };
            let record = crate::bind::ident(i);
            if record != "new" && record != "old" {
                return ControlFlow::Continue(());
            }
            // The row as a one-row derived table, whose whole row the function converts;
            // NULL when the record is (OLD of an INSERT, NEW of a DELETE, both at statement
            // level).
            let fields: Vec<String> = columns
                .iter()
                .map(|c| {
                    let c = crate::bind::quote_ident(c);
                    format!("{record}.{c} AS {c}")
                })
                .collect();
            let absent = if record == "new" { "DELETE" } else { "INSERT" };
            let text = format!(
                "SELECT CASE WHEN tg_level = 'ROW' AND tg_op <> '{absent}' THEN (SELECT {name}(kiln_record) FROM (SELECT {}) AS kiln_record) END",
                fields.join(", ")
            );
            match one_statement(&text) {
                Ok(ast::Statement::Query(q)) => {
                    if let ast::SetExpr::Select(sel) = *q.body {
                        if let Some(ast::SelectItem::UnnamedExpr(built)) =
                            sel.projection.into_iter().next()
                        {
                            *e = built;
                        }
                    }
                    ControlFlow::Continue(())
                }
                Ok(_) => ControlFlow::Continue(()),
                Err(err) => ControlFlow::Break(err),
            }
        });
        match flow {
            ControlFlow::Break(e) => Err(e),
            ControlFlow::Continue(()) => Ok(()),
        }
    }

    fn rewritten(&mut self, e: &ast::Expr, argv: usize) -> Result<Option<ast::Expr>> {
        let name = |i: &ast::Ident| {
            if i.quote_style.is_some() {
                i.value.clone()
            } else {
                i.value.to_lowercase()
            }
        };
        Ok(match e {
            ast::Expr::Identifier(i) => {
                let n = name(i);
                if n == "new" || n == "old" {
                    // The whole row: a row value of its columns.
                    let cols: Vec<ast::Expr> = (0..self.width())
                        .map(|c| {
                            let slot = if n == "new" { c } else { self.width() + c };
                            Self::placeholder(slot)
                        })
                        .collect();
                    if n == "new" {
                        self.used_new = true;
                    } else {
                        self.used_old = true;
                    }
                    Some(ast::Expr::Tuple(cols))
                } else {
                    self.var(&n).map(Self::placeholder)
                }
            }
            ast::Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                let record = name(&parts[0]);
                if record == "new" || record == "old" {
                    Some(Self::placeholder(self.field(&record, &name(&parts[1]))?))
                } else {
                    None
                }
            }
            // Whole rows (`NEW IS DISTINCT FROM OLD`, `OLD IS NULL`), compared column by
            // column as PostgreSQL compares row values.
            ast::Expr::IsDistinctFrom(a, b) | ast::Expr::IsNotDistinctFrom(a, b) => {
                let (ast::Expr::Tuple(x), ast::Expr::Tuple(y)) = (a.as_ref(), b.as_ref()) else {
                    return Ok(None);
                };
                if x.len() != y.len() {
                    return Ok(None);
                }
                let distinct = matches!(e, ast::Expr::IsDistinctFrom(..));
                let parts = x.iter().zip(y).map(|(l, r)| {
                    let (l, r) = (Box::new(l.clone()), Box::new(r.clone()));
                    if distinct {
                        ast::Expr::IsDistinctFrom(l, r)
                    } else {
                        ast::Expr::IsNotDistinctFrom(l, r)
                    }
                });
                let op = if distinct { ast::BinaryOperator::Or } else { ast::BinaryOperator::And };
                Some(joined(parts, op, !distinct))
            }
            ast::Expr::IsNull(a) | ast::Expr::IsNotNull(a) => {
                let ast::Expr::Tuple(x) = a.as_ref() else { return Ok(None) };
                let null = matches!(e, ast::Expr::IsNull(_));
                let parts = x.iter().map(|v| {
                    let v = Box::new(v.clone());
                    if null {
                        ast::Expr::IsNull(v)
                    } else {
                        ast::Expr::IsNotNull(v)
                    }
                });
                Some(joined(parts, ast::BinaryOperator::And, true))
            }
            // TG_ARGV counts from 0.
            ast::Expr::CompoundFieldAccess { root, access_chain }
                if matches!(root.as_ref(), ast::Expr::Value(v)
                    if v.value == ast::Value::Placeholder(format!("${}", argv + 1))) =>
            {
                let mut chain = access_chain.clone();
                if let Some(ast::AccessExpr::Subscript(ast::Subscript::Index { index })) =
                    chain.first_mut()
                {
                    let i = std::mem::replace(index, ast::Expr::Value(ast::Value::Null.into()));
                    *index = ast::Expr::BinaryOp {
                        left: Box::new(ast::Expr::Nested(Box::new(i))),
                        op: ast::BinaryOperator::Plus,
                        right: Box::new(ast::Expr::Value(
                            ast::Value::Number("1".into(), false).into(),
                        )),
                    };
                }
                Some(ast::Expr::CompoundFieldAccess { root: root.clone(), access_chain: chain })
            }
            _ => None,
        })
    }
}

/// `parts` joined with `op`, in parentheses (`empty` when there are none).
fn joined(
    parts: impl Iterator<Item = ast::Expr>,
    op: ast::BinaryOperator,
    empty: bool,
) -> ast::Expr {
    let all = parts.fold(None, |acc: Option<ast::Expr>, p| {
        Some(match acc {
            None => p,
            Some(a) => {
                ast::Expr::BinaryOp { left: Box::new(a), op: op.clone(), right: Box::new(p) }
            }
        })
    });
    ast::Expr::Nested(Box::new(
        all.unwrap_or_else(|| ast::Expr::Value(ast::Value::Boolean(empty).into())),
    ))
}

/// The single statement of `sql`.
fn one_statement(sql: &str) -> Result<ast::Statement> {
    let mut stmts = crate::parse::parse(sql)?;
    if stmts.len() != 1 {
        return Err(SqlError::syntax(format!("expected one statement in \"{sql}\"")));
    }
    Ok(stmts.remove(0))
}

/// The text of a function's body given as a string.
fn body_text(body: &Option<ast::CreateFunctionBody>) -> Result<String> {
    let expr = match body {
        Some(ast::CreateFunctionBody::AsBeforeOptions { body, .. }) => body,
        Some(ast::CreateFunctionBody::AsAfterOptions(body)) => body,
        Some(_) => return Err(SqlError::unsupported("this form of a function's body")),
        None => {
            return Err(SqlError::new(
                code::INVALID_FUNCTION_DEFINITION,
                "no function body specified",
            ))
        }
    };
    match expr {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                Ok(s.clone())
            }
            ast::Value::DollarQuotedString(d) => Ok(d.value.clone()),
            _ => Err(SqlError::syntax("a function's body is a string")),
        },
        _ => Err(SqlError::syntax("a function's body is a string")),
    }
}

fn null_into_not_null() -> SqlError {
    SqlError::new("22004", "null value cannot be assigned to a variable declared NOT NULL")
}

/// The type a declaration names.
fn type_named(text: &str) -> Result<ast::DataType> {
    match one_statement(&format!("SELECT NULL::{text}"))? {
        ast::Statement::Query(q) => match q.body.as_ref() {
            ast::SetExpr::Select(s) => match s.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(ast::Expr::Cast { data_type, .. })) => {
                    Ok(data_type.clone())
                }
                _ => Err(SqlError::syntax(format!("\"{text}\" is not a type"))),
            },
            _ => Err(SqlError::syntax(format!("\"{text}\" is not a type"))),
        },
        _ => Err(SqlError::syntax(format!("\"{text}\" is not a type"))),
    }
}

/// `name()` as messages write a function without arguments.
fn signature(name: &str) -> String {
    format!("{}()", crate::catalog::unqualified(name))
}

impl Writer<'_> {
    /// `CREATE [OR REPLACE] FUNCTION name() RETURNS trigger LANGUAGE plpgsql AS $$ … $$`.
    pub(crate) fn create_function(
        &mut self,
        cf: &ast::CreateFunction,
        database: &str,
    ) -> Result<Output> {
        let name = name_as_written(&cf.name)?;
        if name.contains('.') {
            return Err(SqlError::unsupported("functions in a schema other than public"));
        }
        let returns_trigger = matches!(
            &cf.return_type,
            Some(ast::FunctionReturnType::DataType(ast::DataType::Trigger))
        ) || matches!(&cf.return_type,
            Some(ast::FunctionReturnType::DataType(ast::DataType::Custom(n, _)))
                if n.to_string().eq_ignore_ascii_case("trigger"));
        if !returns_trigger {
            return Err(SqlError::unsupported(
                "CREATE FUNCTION of a function that is not a trigger function",
            )
            .hint("Kiln runs PL/pgSQL trigger functions (RETURNS trigger) only."));
        }
        if cf.args.as_ref().is_some_and(|a| !a.is_empty()) {
            return Err(SqlError::new(
                code::INVALID_FUNCTION_DEFINITION,
                "trigger functions cannot have declared arguments",
            )
            .hint("The arguments of the trigger can be accessed through TG_NARGS and TG_ARGV instead."));
        }
        let language = cf.language.as_ref().map(|l| l.value.to_lowercase());
        match language.as_deref() {
            Some("plpgsql") => {}
            Some(other) => {
                return Err(SqlError::unsupported(format!("functions in language {other}"))
                    .hint("Kiln runs PL/pgSQL trigger functions only."))
            }
            None => {
                return Err(SqlError::new(
                    code::INVALID_FUNCTION_DEFINITION,
                    "no language specified",
                ))
            }
        }
        let body = body_text(&cf.function_body)?;
        do_block::function_body(&body)?;
        let existing = self.db.catalog.function(&mut self.ts.txn, database, &name)?;
        let comment = existing.as_ref().and_then(|f| f.comment.clone());
        let id = match existing {
            Some(f) if cf.or_replace => f.id,
            Some(_) => {
                return Err(SqlError::new(
                    code::DUPLICATE_FUNCTION,
                    format!("function \"{name}\" already exists with same argument types"),
                ))
            }
            None => self.db.catalog.next_id(&mut self.ts.txn)?,
        };
        let f = Function { id, name, language: "plpgsql".into(), body, comment };
        self.db.catalog.put_function(&mut self.ts.txn, database, &f)?;
        Ok(Output::Command("CREATE FUNCTION".into()))
    }

    /// The tables with triggers that run function `name`, and those triggers' names.
    fn triggers_running(
        &mut self,
        database: &str,
        name: &str,
    ) -> Result<Vec<(Arc<Table>, String)>> {
        let mut out = Vec::new();
        for t in self.db.catalog.tables(&mut self.ts.txn, database)? {
            for tr in &t.triggers {
                if tr.function == name {
                    out.push((t.clone(), tr.name.clone()));
                }
            }
        }
        Ok(out)
    }

    /// `DROP FUNCTION [IF EXISTS] name[()] [, …] [CASCADE | RESTRICT]`.
    pub(crate) fn drop_functions(
        &mut self,
        df: &ast::DropFunction,
        database: &str,
    ) -> Result<Output> {
        let cascade = matches!(df.drop_behavior, Some(ast::DropBehavior::Cascade));
        for desc in &df.func_desc {
            let name = name_as_written(&desc.name)?;
            let found = self.db.catalog.function(&mut self.ts.txn, database, &name)?;
            let takes_args = desc.args.as_ref().is_some_and(|a| !a.is_empty());
            if found.is_none() || takes_args {
                let shown = if takes_args { desc.to_string() } else { signature(&name) };
                if df.if_exists {
                    self.skipping("00000", format!("function {shown} does not exist"));
                    continue;
                }
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {shown} does not exist"),
                ));
            }
            let users = self.triggers_running(database, &name)?;
            if !users.is_empty() && !cascade {
                let lines: Vec<String> = users
                    .iter()
                    .map(|(t, tr)| {
                        format!(
                            "trigger {tr} on table {} depends on function {}",
                            crate::catalog::unqualified(&t.name),
                            signature(&name)
                        )
                    })
                    .collect();
                return Err(crate::exec::write::depended_on(
                    &format!("function {}", signature(&name)),
                    &lines,
                ));
            }
            for (t, tr) in users {
                let mut table = (*t).clone();
                table.triggers.retain(|x| x.name != tr);
                self.db.catalog.put_table(&mut self.ts.txn, &table)?;
                self.cascade_to(format!(
                    "trigger {tr} on table {}",
                    crate::catalog::unqualified(&t.name)
                ));
            }
            self.db.catalog.delete_function(&mut self.ts.txn, database, &name)?;
        }
        self.report_cascade();
        Ok(Output::Command("DROP FUNCTION".into()))
    }

    /// `ALTER FUNCTION name[()] OWNER TO role | RENAME TO new` (owners change nothing: Kiln
    /// has no privileges).
    pub(crate) fn alter_function(
        &mut self,
        af: &ast::AlterFunction,
        database: &str,
    ) -> Result<Output> {
        if af.kind != ast::AlterFunctionKind::Function {
            return Err(SqlError::unsupported("ALTER AGGREGATE"));
        }
        let name = name_as_written(&af.function.name)?;
        let takes_args = af.function.args.as_ref().is_some_and(|a| !a.is_empty());
        let Some(mut f) = self.db.catalog.function(&mut self.ts.txn, database, &name)? else {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {} does not exist", af.function),
            ));
        };
        if takes_args {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {} does not exist", af.function),
            ));
        }
        match &af.operation {
            ast::AlterFunctionOperation::OwnerTo(_) => {}
            ast::AlterFunctionOperation::RenameTo { new_name } => {
                let new = crate::bind::ident(new_name);
                if self.db.catalog.function(&mut self.ts.txn, database, &new)?.is_some() {
                    return Err(SqlError::new(
                        code::DUPLICATE_FUNCTION,
                        format!("function {}() already exists in schema \"public\"", new),
                    ));
                }
                for (t, _) in self.triggers_running(database, &name)? {
                    let mut table = (*t).clone();
                    for tr in &mut table.triggers {
                        if tr.function == name {
                            tr.function = new.clone();
                        }
                    }
                    self.db.catalog.put_table(&mut self.ts.txn, &table)?;
                }
                self.db.catalog.delete_function(&mut self.ts.txn, database, &name)?;
                f.name = new;
                self.db.catalog.put_function(&mut self.ts.txn, database, &f)?;
            }
            _ => return Err(SqlError::unsupported("this form of ALTER FUNCTION")),
        }
        Ok(Output::Command("ALTER FUNCTION".into()))
    }

    /// The error for a table name that names no table: 42P01, or 42809 naming a view.
    fn no_table(&mut self, database: &str, name: &str) -> SqlError {
        match self.db.catalog.table_or_err(&mut self.ts.txn, database, name) {
            Err(e) => e,
            Ok(_) => SqlError::new(
                code::UNDEFINED_TABLE,
                format!("relation \"{}\" does not exist", crate::catalog::unqualified(name)),
            ),
        }
    }

    /// `CREATE [OR REPLACE] TRIGGER …` (see `parse::trigger`).
    pub(crate) fn create_trigger(
        &mut self,
        ct: &CreateTrigger,
        database: &str,
        env: &dyn Env,
    ) -> Result<Output> {
        let table_name = object_name(&ct.table)?;
        let Some(table) = self.db.catalog.table(&mut self.ts.txn, database, &table_name)? else {
            if self.db.catalog.view(&mut self.ts.txn, database, &table_name)?.is_some() {
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("\"{}\" is a view", crate::catalog::unqualified(&table_name)),
                )
                .detail("Views cannot have row-level BEFORE or AFTER triggers."));
            }
            return Err(self.no_table(database, &table_name));
        };
        let function = name_as_written(&ct.function)?;
        if self.db.catalog.function(&mut self.ts.txn, database, &function)?.is_none() {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {} does not exist", signature(&function)),
            ));
        }
        let shown = crate::catalog::unqualified(&table.name).to_string();
        let existing = table.triggers.iter().find(|t| t.name == ct.name);
        if existing.is_some() && !ct.or_replace {
            return Err(SqlError::new(
                code::DUPLICATE_OBJECT,
                format!("trigger \"{}\" for relation \"{shown}\" already exists", ct.name),
            ));
        }
        for c in &ct.update_of {
            if !table.columns.iter().any(|x| x.name == *c) {
                return Err(SqlError::new(
                    code::UNDEFINED_COLUMN,
                    format!("column \"{c}\" of relation \"{shown}\" does not exist"),
                ));
            }
        }
        let id = match existing {
            Some(t) => t.id,
            None => self.db.catalog.next_id(&mut self.ts.txn)?,
        };
        let trigger = Trigger {
            id,
            name: ct.name.clone(),
            before: ct.before,
            insert: ct.insert,
            update: ct.update,
            delete: ct.delete,
            update_of: ct.update_of.clone(),
            row: ct.row,
            when: ct.when.clone(),
            function,
            args: ct.args.clone(),
            disabled: false,
        };
        if let Some(when) = &trigger.when {
            // Bound now, so that a wrong condition fails the CREATE, as in PostgreSQL.
            let mut frame = Frame::new(&table, &[]);
            let condition = self.expression(&mut frame, database, when, env)?;
            if condition.ty != DataType::Bool && condition.ty != DataType::Unknown {
                return Err(SqlError::new(
                    code::DATATYPE_MISMATCH,
                    "argument of WHEN must be type boolean",
                ));
            }
            let invalid = |m: &str| Err(SqlError::new("42P17", m.to_string()));
            if !trigger.row && (frame.used_new || frame.used_old) {
                return invalid(
                    "statement trigger's WHEN condition cannot reference column values",
                );
            }
            if trigger.insert && frame.used_old {
                return invalid("INSERT trigger's WHEN condition cannot reference OLD values");
            }
            if trigger.delete && frame.used_new {
                return invalid("DELETE trigger's WHEN condition cannot reference NEW values");
            }
        }
        let mut def = (*table).clone();
        def.triggers.retain(|t| t.name != trigger.name);
        def.triggers.push(trigger);
        def.triggers.sort_by(|a, b| a.name.cmp(&b.name));
        self.db.catalog.put_table(&mut self.ts.txn, &def)?;
        Ok(Output::Command("CREATE TRIGGER".into()))
    }

    /// `DROP TRIGGER [IF EXISTS] name ON table [CASCADE | RESTRICT]`.
    pub(crate) fn drop_trigger(&mut self, dt: &ast::DropTrigger, database: &str) -> Result<Output> {
        let name = name_as_written(&dt.trigger_name)?;
        let Some(table_name) = &dt.table_name else {
            return Err(SqlError::syntax("DROP TRIGGER needs ON table"));
        };
        let table_name = object_name(table_name)?;
        let shown = crate::catalog::unqualified(&table_name).to_string();
        let table = match self.db.catalog.table(&mut self.ts.txn, database, &table_name)? {
            Some(t) => t,
            None if dt.if_exists => {
                self.skipping("00000", format!("relation \"{shown}\" does not exist"));
                return Ok(Output::Command("DROP TRIGGER".into()));
            }
            None => return Err(self.no_table(database, &table_name)),
        };
        if !table.triggers.iter().any(|t| t.name == name) {
            if dt.if_exists {
                self.skipping(
                    "00000",
                    format!("trigger \"{name}\" for relation \"{shown}\" does not exist"),
                );
                return Ok(Output::Command("DROP TRIGGER".into()));
            }
            return Err(SqlError::new(
                code::UNDEFINED_OBJECT,
                format!("trigger \"{name}\" for table \"{shown}\" does not exist"),
            ));
        }
        let mut def = (*table).clone();
        def.triggers.retain(|t| t.name != name);
        self.db.catalog.put_table(&mut self.ts.txn, &def)?;
        Ok(Output::Command("DROP TRIGGER".into()))
    }
}

impl<'t> Frame<'t> {
    fn new(table: &'t Table, declared: &[(String, DataType, bool)]) -> Frame<'t> {
        let mut types: Vec<DataType> = table.columns.iter().map(|c| c.ty).collect();
        types.extend(table.columns.iter().map(|c| c.ty));
        types.extend((0..TG_VARS.len()).map(tg_type));
        // The last SQL statement's row count (GET DIAGNOSTICS), which no name reaches.
        types.push(DataType::Int8);
        let mut vars = Vec::new();
        for (name, ty, constant) in declared {
            vars.push((name.clone(), types.len(), *constant));
            types.push(*ty);
        }
        Frame {
            table,
            vars,
            types,
            not_null: Vec::new(),
            deps: Dependencies::new(),
            used_new: false,
            used_old: false,
        }
    }
}

impl Writer<'_> {
    /// Binds with a planner whose parameters are the frame's slots, and records what the
    /// binding depended on.
    fn planned<T>(
        &mut self,
        database: &str,
        frame: &mut Frame,
        env: &dyn Env,
        bind: impl FnOnce(&mut Planner) -> Result<T>,
    ) -> Result<T> {
        let mut planner = Planner::new(
            &mut self.ts.txn,
            &self.db.catalog,
            database,
            frame.types.clone(),
            &NoSystemTables,
            env,
        );
        let bound = bind(&mut planner)?;
        frame.deps.absorb(&planner);
        Ok(bound)
    }

    /// Binds an expression of the frame as a one-column query.
    fn expression(
        &mut self,
        frame: &mut Frame,
        database: &str,
        text: &str,
        env: &dyn Env,
    ) -> Result<Query> {
        let mut stmt = one_statement(&format!("SELECT ({text})"))?;
        frame.rewrite(&mut stmt)?;
        let ast::Statement::Query(q) = &stmt else {
            return Err(SqlError::syntax(format!("syntax error in expression \"{text}\"")));
        };
        let plan = self.planned(database, frame, env, |p| p.query(q, None))?;
        let ty = plan.columns.first().map_or(DataType::Unknown, |c| c.1);
        Ok(Query { plan: Box::new(plan), ty })
    }

    /// The bound program of `trigger` on `table` (bound once per statement).
    ///
    /// Programs are also kept across statements and sessions (`Database::trigger_programs`),
    /// each used again while its function's body, its table's definition and every
    /// definition its statements were bound against are unchanged (as a prepared statement's
    /// plan is), under the same time zone and search path.
    fn program(&mut self, table: &Table, trigger: &Trigger, env: &dyn Env) -> Result<Arc<Program>> {
        if let Some(p) = self.triggers.programs.get(&trigger.id) {
            return Ok(p.clone());
        }
        let database = table.database.clone();
        let Some(function) =
            self.db.catalog.function(&mut self.ts.txn, &database, &trigger.function)?
        else {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {} does not exist", signature(&trigger.function)),
            ));
        };
        let key = (database.clone(), trigger.id);
        let kept = self.db.trigger_programs.lock().get(&key).cloned();
        if let Some(kept) = kept {
            if kept.body == function.body
                && kept.deps.still_valid(
                    &mut self.ts.txn,
                    &self.db.catalog,
                    &database,
                    env.style(),
                )?
            {
                self.triggers.programs.insert(trigger.id, kept.program.clone());
                return Ok(kept.program.clone());
            }
        }
        let (program, deps) = self.bind_program(table, trigger, &function, env)?;
        self.triggers.programs.insert(trigger.id, program.clone());
        if deps.reusable() {
            let mut kept = self.db.trigger_programs.lock();
            if kept.len() >= KEPT_PROGRAMS_MAX {
                kept.clear();
            }
            let entry = KeptProgram { body: function.body, deps, program: program.clone() };
            kept.insert(key, Arc::new(entry));
        }
        Ok(program)
    }

    /// Binds a trigger's function for its table: the program and what it depends on.
    fn bind_program(
        &mut self,
        table: &Table,
        trigger: &Trigger,
        function: &Function,
        env: &dyn Env,
    ) -> Result<(Arc<Program>, Dependencies)> {
        let database = table.database.clone();
        let body: FunctionBody = do_block::function_body(&function.body)?;
        let mut declared = Vec::new();
        for d in &body.declarations {
            let ty = crate::bind::resolve_type(
                &type_named(&d.ty)?,
                &self.db.catalog,
                &mut self.ts.txn,
                &database,
            )?;
            declared.push((d.name.clone(), ty, d.constant));
        }
        let mut frame = Frame::new(table, &declared);
        for (k, d) in body.declarations.iter().enumerate() {
            if d.not_null {
                frame.not_null.push(frame.vars[k].1);
            }
        }
        let mut bound = Vec::new();
        // Each variable's initial value may read the variables declared before it.
        for (k, d) in body.declarations.iter().enumerate() {
            let default = match &d.default {
                Some(e) => Some(self.expression(&mut frame, &database, e, env)?),
                None => None,
            };
            bound.push((frame.vars[k].1, declared[k].1, default, d.not_null));
        }
        let when = match &trigger.when {
            Some(w) => Some(self.expression(&mut frame, &database, w, env)?),
            None => None,
        };
        let steps = self.steps(&mut frame, &database, &body.body.statements, env)?;
        let program = Arc::new(Program {
            width: table.columns.len(),
            slots: frame.types.len(),
            declared: bound,
            when,
            body: steps,
        });
        // The frame is the table's columns: the program depends on its definition too.
        let mut deps = frame.deps;
        match self.db.catalog.table(&mut self.ts.txn, &database, &table.name)? {
            Some(t) => deps.table(&t),
            None => deps = Dependencies::unusable(),
        }
        Ok((program, deps))
    }

    fn steps(
        &mut self,
        frame: &mut Frame,
        database: &str,
        statements: &[Stmt],
        env: &dyn Env,
    ) -> Result<Vec<Step>> {
        let mut out = Vec::with_capacity(statements.len());
        for s in statements {
            out.push(match s {
                Stmt::Assign(target, e) => {
                    let (slot, ty, not_null) = match target.as_slice() {
                        [record, col] if record == "new" || record == "old" => {
                            let slot = frame.field(record, col)?;
                            (slot, frame.types[slot], false)
                        }
                        [name] => {
                            let Some((slot, constant)) = frame.declared(name) else {
                                if frame.var(name).is_some() {
                                    return Err(refused(&format!("assigning to {name}")));
                                }
                                return Err(SqlError::syntax(format!(
                                    "\"{name}\" is not a known variable"
                                )));
                            };
                            if constant {
                                return Err(SqlError::syntax(format!(
                                    "variable \"{name}\" is declared CONSTANT"
                                )));
                            }
                            (slot, frame.types[slot], frame.not_null.contains(&slot))
                        }
                        _ => {
                            return Err(SqlError::syntax(format!(
                                "\"{}\" is not a known variable",
                                target.join(".")
                            )))
                        }
                    };
                    let value = self.expression(frame, database, e, env)?;
                    Step::Assign { slot, ty, value, not_null }
                }
                Stmt::If(arms, otherwise) => {
                    let mut bound = Vec::with_capacity(arms.len());
                    for (c, body) in arms {
                        let c = self.expression(frame, database, c, env)?;
                        bound.push((c, self.steps(frame, database, body, env)?));
                    }
                    Step::If(bound, self.steps(frame, database, otherwise, env)?)
                }
                Stmt::Raise(r) => {
                    let mut params = Vec::new();
                    for p in &r.params {
                        params.push(self.expression(frame, database, p, env)?);
                    }
                    let mut using = Vec::new();
                    for (_, e) in &r.using {
                        using.push(self.expression(frame, database, e, env)?);
                    }
                    Step::Raise { raise: r.clone(), params, using }
                }
                Stmt::Assert(c, m) => {
                    let c = self.expression(frame, database, c, env)?;
                    let m = match m {
                        Some(m) => Some(self.expression(frame, database, m, env)?),
                        None => None,
                    };
                    Step::Assert(c, m)
                }
                Stmt::Perform(q) => {
                    let mut stmt = one_statement(q)?;
                    frame.rewrite(&mut stmt)?;
                    let ast::Statement::Query(q) = &stmt else {
                        return Err(SqlError::syntax("PERFORM takes a query"));
                    };
                    Step::Perform(Box::new(
                        self.planned(database, frame, env, |p| p.query(q, None))?,
                    ))
                }
                Stmt::Sql(text) => self.sql_step(frame, database, text, env)?,
                Stmt::Return(e) => Step::Return(match e.as_deref().map(returned_record) {
                    Some(Some(r)) => r,
                    None => {
                        return Err(SqlError::syntax(
                            "RETURN in a trigger function needs NEW, OLD or NULL",
                        ))
                    }
                    Some(None) => {
                        return Err(refused(
                            "RETURN of anything but NEW, OLD, NULL or COALESCE(NEW, OLD)",
                        ));
                    }
                }),
                Stmt::Block(b) => Step::Block(self.steps(frame, database, &b.statements, env)?),
                Stmt::Loop(condition, body) => {
                    let condition = match condition {
                        Some(c) => Some(self.expression(frame, database, c, env)?),
                        None => None,
                    };
                    Step::Loop { condition, body: self.steps(frame, database, body, env)? }
                }
                Stmt::ForRange(f) => {
                    let low = self.expression(frame, database, &f.low, env)?;
                    let high = self.expression(frame, database, &f.high, env)?;
                    let step = match &f.step {
                        Some(s) => Some(self.expression(frame, database, s, env)?),
                        None => None,
                    };
                    // The loop variable: an integer of its own, seen inside the loop only.
                    let slot = frame.types.len();
                    frame.types.push(DataType::Int4);
                    frame.vars.push((f.var.clone(), slot, false));
                    let body = self.steps(frame, database, &f.body, env);
                    frame.vars.pop();
                    Step::ForRange { slot, low, high, step, reverse: f.reverse, body: body? }
                }
                Stmt::GetDiagnostics(names) => {
                    let mut targets = Vec::with_capacity(names.len());
                    for n in names {
                        let Some((slot, constant)) = frame.declared(n) else {
                            return Err(SqlError::syntax(format!(
                                "\"{n}\" is not a known variable"
                            )));
                        };
                        if constant {
                            return Err(SqlError::syntax(format!(
                                "variable \"{n}\" is declared CONSTANT"
                            )));
                        }
                        targets.push((slot, frame.types[slot]));
                    }
                    Step::GetDiagnostics(targets)
                }
                Stmt::Exit(exit, condition) => {
                    let condition = match condition {
                        Some(c) => Some(self.expression(frame, database, c, env)?),
                        None => None,
                    };
                    Step::Exit { exit: *exit, condition }
                }
                Stmt::Execute(_) => return Err(refused("EXECUTE")),
            });
        }
        Ok(out)
    }

    /// An SQL statement of a function: SELECT … INTO, INSERT, UPDATE or DELETE.
    fn sql_step(
        &mut self,
        frame: &mut Frame,
        database: &str,
        text: &str,
        env: &dyn Env,
    ) -> Result<Step> {
        let mut stmt = one_statement(text)?;
        // SELECT … INTO targets: taken out before the rewrite (they are assigned, not read).
        let mut into = None;
        if let ast::Statement::Query(q) = &mut stmt {
            if let ast::SetExpr::Select(s) = q.body.as_mut() {
                into = s.into.take();
            }
        }
        frame.rewrite(&mut stmt)?;
        match &stmt {
            ast::Statement::Query(q) => {
                let Some(into) = into else {
                    return Err(SqlError::syntax("query has no destination for result data").hint(
                        "If you want to discard the results of a SELECT, use PERFORM instead.",
                    ));
                };
                let mut targets = Vec::new();
                for t in &into.targets {
                    let slot = match t {
                        ast::Expr::Identifier(i) => {
                            let n = crate::bind::ident(i);
                            frame.declared(&n).map(|(slot, _)| slot).ok_or_else(|| {
                                SqlError::syntax(format!("\"{n}\" is not a known variable"))
                            })?
                        }
                        ast::Expr::CompoundIdentifier(p) if p.len() == 2 => {
                            let record = crate::bind::ident(&p[0]);
                            if record != "new" && record != "old" {
                                return Err(SqlError::syntax(format!(
                                    "\"{t}\" is not a known variable"
                                )));
                            }
                            frame.field(&record, &crate::bind::ident(&p[1]))?
                        }
                        _ => {
                            return Err(SqlError::syntax(format!(
                                "\"{t}\" is not a known variable"
                            )))
                        }
                    };
                    targets.push((slot, frame.types[slot]));
                }
                let plan = self.planned(database, frame, env, |p| p.query(q, None))?;
                if plan.columns.len() != targets.len() {
                    return Err(SqlError::syntax(format!(
                        "the query gives {} columns into {} variables",
                        plan.columns.len(),
                        targets.len()
                    )));
                }
                Ok(Step::SelectInto { plan: Box::new(plan), targets })
            }
            ast::Statement::Insert(ins) => {
                Ok(Step::Insert(Box::new(
                    self.planned(database, frame, env, |p| plan_insert(p, ins))?,
                )))
            }
            ast::Statement::Update(u) => {
                Ok(Step::Update(Box::new(
                    self.planned(database, frame, env, |p| plan_update(p, u))?,
                )))
            }
            ast::Statement::Delete(d) => {
                Ok(Step::Delete(Box::new(
                    self.planned(database, frame, env, |p| plan_delete(p, d))?,
                )))
            }
            other => Err(refused(&format!(
                "the statement {}",
                other.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" ")
            ))),
        }
    }

    /// Runs a one-column query with the frame as its parameters.
    fn eval(&mut self, q: &Query, frame: &[Value], env: &dyn Env) -> Result<Value> {
        let rows = self.rows(&q.plan, frame, env)?;
        Ok(rows.into_iter().next().and_then(|r| r.into_iter().next()).unwrap_or(Value::Null))
    }

    fn rows(
        &mut self,
        plan: &SelectPlan,
        frame: &[Value],
        env: &dyn Env,
    ) -> Result<Vec<Vec<Value>>> {
        let limits = self.limits.clone();
        let ctx = Ctx::new(frame, env);
        let plan = InitPlans::with(&mut self.ts.txn, &ctx, &limits, |i| i.select(plan.clone()))?;
        let cell = RefCell::new(&mut self.ts.txn);
        let exec = Exec::new(&cell, &limits);
        let ctx = Ctx { runner: Some(&exec), ..ctx };
        execute_select(&plan, &cell, &ctx, &limits)
    }

    fn truth(&mut self, q: &Query, frame: &[Value], env: &dyn Env) -> Result<bool> {
        Ok(matches!(self.eval(q, frame, env)?, Value::Bool(true)))
    }

    /// Runs a program's steps.
    fn run_steps(
        &mut self,
        width: usize,
        steps: &[Step],
        frame: &mut Vec<Value>,
        env: &dyn Env,
    ) -> Result<Flow> {
        let found = 2 * width + FOUND;
        let row_count = 2 * width + TG_VARS.len();
        for s in steps {
            self.interrupted()?;
            match s {
                Step::Assign { slot, ty, value, not_null } => {
                    let v = self.eval(value, frame, env)?;
                    if *not_null && v.is_null() {
                        return Err(null_into_not_null());
                    }
                    frame[*slot] = assign(v, *ty, env.style())?;
                }
                Step::If(arms, otherwise) => {
                    let mut taken = otherwise;
                    for (c, body) in arms {
                        if self.truth(c, frame, env)? {
                            taken = body;
                            break;
                        }
                    }
                    match self.run_steps(width, taken, frame, env)? {
                        Flow::Next => {}
                        other => return Ok(other),
                    }
                }
                Step::Block(body) => match self.run_steps(width, body, frame, env)? {
                    Flow::Next => {}
                    other => return Ok(other),
                },
                Step::Raise { raise, params, using } => {
                    let mut texts = Vec::with_capacity(params.len());
                    for q in params {
                        texts.push(self.eval(q, frame, env)?.to_text_in(q.ty, env.style()));
                    }
                    let mut options = Vec::with_capacity(using.len());
                    for q in using {
                        options.push(self.eval(q, frame, env)?.to_text_in(q.ty, env.style()));
                    }
                    let Some(e) = do_block::raised(raise, &texts, &options)? else {
                        return Err(SqlError::new(
                            "0Z002",
                            "RAISE without parameters cannot be used outside an exception handler",
                        ));
                    };
                    if raise.level == Level::Exception {
                        return Err(e);
                    }
                    raise_notice(self.notices, Notice { level: raise.level, fields: e });
                }
                Step::Assert(c, m) => {
                    if !self.truth(c, frame, env)? {
                        let message = match m {
                            Some(m) => self
                                .eval(m, frame, env)?
                                .to_text_in(m.ty, env.style())
                                .unwrap_or_else(|| "<NULL>".into()),
                            None => "assertion failed".into(),
                        };
                        return Err(SqlError::new("P0004", message));
                    }
                }
                Step::Perform(plan) => {
                    let n = self.rows(plan, frame, env)?.len();
                    frame[found] = Value::Bool(n > 0);
                    frame[row_count] = Value::Int(n as i64);
                }
                Step::SelectInto { plan, targets } => {
                    let rows = self.rows(plan, frame, env)?;
                    frame[found] = Value::Bool(!rows.is_empty());
                    // The one row taken, as in PL/pgSQL.
                    frame[row_count] = Value::Int(rows.len().min(1) as i64);
                    let row = rows.into_iter().next();
                    for (k, (slot, ty)) in targets.iter().enumerate() {
                        let v = row.as_ref().map_or(Value::Null, |r| r[k].clone());
                        frame[*slot] = assign(v, *ty, env.style())?;
                    }
                }
                Step::Insert(_) | Step::Update(_) | Step::Delete(_) => {
                    let n = self.nested(s, frame, env)?;
                    frame[found] = Value::Bool(n > 0);
                    frame[row_count] = Value::Int(n as i64);
                }
                Step::Return(r) => return Ok(Flow::Return(*r)),
                Step::GetDiagnostics(targets) => {
                    for (slot, ty) in targets {
                        frame[*slot] = assign(frame[row_count].clone(), *ty, env.style())?;
                    }
                }
                Step::Exit { exit, condition } => {
                    let taken = match condition {
                        Some(c) => self.truth(c, frame, env)?,
                        None => true,
                    };
                    if taken {
                        return Ok(if *exit { Flow::Exit } else { Flow::Continue });
                    }
                }
                Step::Loop { condition, body } => loop {
                    self.interrupted()?;
                    if let Some(c) = condition {
                        if !self.truth(c, frame, env)? {
                            break;
                        }
                    }
                    match self.run_steps(width, body, frame, env)? {
                        Flow::Return(r) => return Ok(Flow::Return(r)),
                        Flow::Exit => break,
                        Flow::Next | Flow::Continue => {}
                    }
                },
                Step::ForRange { slot, low, high, step, reverse, body } => {
                    let bound = |w: &mut Self, q: &Query, what: &str| -> Result<i64> {
                        match assign(w.eval(q, frame, env)?, DataType::Int4, env.style())? {
                            Value::Int(i) => Ok(i),
                            _ => Err(SqlError::new(
                                "22004",
                                format!("{what} of FOR loop cannot be null"),
                            )),
                        }
                    };
                    let (low, high) =
                        (bound(self, low, "lower bound")?, bound(self, high, "upper bound")?);
                    let by = match step {
                        Some(q) => bound(self, q, "BY value")?,
                        None => 1,
                    };
                    if by <= 0 {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER_VALUE,
                            "BY value of FOR loop must be greater than zero",
                        ));
                    }
                    // REVERSE counts from the first bound down to the second.
                    let mut i = low;
                    while if *reverse { i >= high } else { i <= high } {
                        self.interrupted()?;
                        frame[*slot] = Value::Int(i);
                        match self.run_steps(width, body, frame, env)? {
                            Flow::Return(r) => return Ok(Flow::Return(r)),
                            Flow::Exit => break,
                            Flow::Next | Flow::Continue => {}
                        }
                        let next = if *reverse { i.checked_sub(by) } else { i.checked_add(by) };
                        match next {
                            Some(n) => i = n,
                            None => break,
                        }
                    }
                }
            }
        }
        Ok(Flow::Next)
    }
}

impl Writer<'_> {
    /// Runs an INSERT, UPDATE or DELETE of a function as a statement of its own: its AFTER
    /// triggers and NO ACTION checks run when it ends, apart from the calling statement's.
    /// Returns how many rows it wrote.
    fn nested(&mut self, step: &Step, frame: &[Value], env: &dyn Env) -> Result<u64> {
        let limits = self.limits.clone();
        let ctx = Ctx::new(frame, env);
        let outer_constraints = std::mem::take(&mut self.constraints);
        let outer_pending = std::mem::take(&mut self.triggers.pending);
        let txn = &mut self.ts.txn;
        let result = match step {
            Step::Insert(p) => InitPlans::with(txn, &ctx, &limits, |i| i.insert((**p).clone()))
                .and_then(|p| self.insert(p, &ctx, &limits)),
            Step::Update(p) => InitPlans::with(txn, &ctx, &limits, |i| i.update((**p).clone()))
                .and_then(|p| self.update(p, &ctx, &limits)),
            Step::Delete(p) => InitPlans::with(txn, &ctx, &limits, |i| i.delete((**p).clone()))
                .and_then(|p| self.delete(p, &ctx, &limits)),
            _ => unreachable!("nested runs writes"),
        };
        self.constraints = outer_constraints;
        self.triggers.pending = outer_pending;
        Ok(match result? {
            Output::Rows { rows, .. } => rows.len() as u64,
            Output::Command(tag) => {
                tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
            }
            _ => 0,
        })
    }

    /// Calls a trigger's function: its frame built, its WHEN checked (`None`: not fired),
    /// its body run. Returns what it returned.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        table: &Table,
        trigger: &Trigger,
        event: Event,
        new: Option<&[Value]>,
        old: Option<&[Value]>,
        env: &dyn Env,
    ) -> Result<Option<(Returned, Vec<Value>)>> {
        let program = self.program(table, trigger, env)?;
        let width = program.width;
        let mut frame = Vec::with_capacity(program.slots);
        for record in [new, old] {
            match record {
                Some(r) => frame.extend_from_slice(r),
                None => frame.extend(std::iter::repeat_n(Value::Null, width)),
            }
        }
        let text = |s: &str| Value::Text(s.to_string());
        frame.push(text(event.name()));
        frame.push(text(&trigger.name));
        frame.push(text(if trigger.before { "BEFORE" } else { "AFTER" }));
        frame.push(text(if trigger.row { "ROW" } else { "STATEMENT" }));
        frame.push(text(crate::catalog::unqualified(&table.name)));
        frame.push(text(crate::catalog::schema_of(&table.name)));
        frame.push(text(crate::catalog::unqualified(&table.name)));
        frame.push(Value::Int(trigger.args.len() as i64));
        frame.push(Value::Array(trigger.args.iter().map(|a| text(a)).collect()));
        frame.push(Value::Bool(false));
        frame.push(Value::Int(0));
        frame.resize(program.slots, Value::Null);
        if let Some(when) = &program.when {
            if !self.truth(when, &frame, env)? {
                return Ok(None);
            }
        }
        self.triggers.depth += 1;
        if self.triggers.depth > DEPTH_MAX {
            self.triggers.depth -= 1;
            return Err(SqlError::new(
                code::STATEMENT_TOO_COMPLEX,
                "stack depth limit exceeded",
            )
            .hint(format!(
                "Triggers nest at most {DEPTH_MAX} calls deep; trigger \"{}\" on \"{}\" fires itself again through the statements it runs.",
                trigger.name,
                crate::catalog::unqualified(&table.name)
            )));
        }
        let result = (|| {
            for (slot, ty, default, not_null) in &program.declared {
                if let Some(d) = default {
                    let v = self.eval(d, &frame, env)?;
                    frame[*slot] = assign(v, *ty, env.style())?;
                }
                if *not_null && frame[*slot].is_null() {
                    return Err(null_into_not_null());
                }
            }
            self.run_steps(width, &program.body, &mut frame, env)
        })();
        self.triggers.depth -= 1;
        let flow = result?;
        Ok(Some(match flow {
            Flow::Return(r) => (r, frame),
            // (EXIT and CONTINUE are read inside loops only.)
            Flow::Next | Flow::Exit | Flow::Continue if trigger.before && trigger.row => {
                return Err(SqlError::new(
                    "2F005",
                    "control reached end of trigger procedure without RETURN",
                )
                .hint(format!("The function is {}.", signature(&trigger.function))))
            }
            Flow::Next | Flow::Exit | Flow::Continue => (Returned::Null, frame),
        }))
    }

    /// Whether `trigger` fires for this row event: `UPDATE OF` columns against the columns
    /// the UPDATE sets.
    fn fires(trigger: &Trigger, table: &Table, event: Event, set: Option<&[usize]>) -> bool {
        if !trigger.fires_on(event.name()) {
            return false;
        }
        if event != Event::Update || trigger.update_of.is_empty() {
            return true;
        }
        let Some(set) = set else { return true };
        set.iter().any(|&c| trigger.update_of.iter().any(|n| table.columns[c].name == *n))
    }

    /// Runs the BEFORE ROW triggers of a row: the row to write (as the triggers left it),
    /// or `None` when one of them skipped it. `new` is the row an INSERT or UPDATE would
    /// write, `old` the row an UPDATE or DELETE changes, `set` the columns an UPDATE sets.
    pub(crate) fn before_row(
        &mut self,
        table: &Table,
        event: Event,
        new: Option<Vec<Value>>,
        old: Option<&[Value]>,
        set: Option<&[usize]>,
        env: &dyn Env,
    ) -> Result<Option<Vec<Value>>> {
        let mut new = new;
        for trigger in &table.triggers {
            if !(trigger.before && trigger.row && Self::fires(trigger, table, event, set)) {
                continue;
            }
            let Some((returned, frame)) =
                self.call(table, trigger, event, new.as_deref(), old, env)?
            else {
                continue;
            };
            let width = table.columns.len();
            let new_row = (event != Event::Delete).then(|| frame[..width].to_vec());
            let old_row = (event != Event::Insert).then(|| frame[width..2 * width].to_vec());
            let row = match returned {
                Returned::New => new_row,
                Returned::Old => old_row,
                Returned::NewOrOld => new_row.or(old_row),
                Returned::OldOrNew => old_row.or(new_row),
                Returned::Null => None,
            };
            let Some(row) = row else { return Ok(None) };
            new = Some(row);
        }
        Ok(Some(new.unwrap_or_else(|| old.map(<[Value]>::to_vec).unwrap_or_default())))
    }

    /// Whether `table` has row triggers of `event` (BEFORE or AFTER).
    pub(crate) fn has_row_triggers(table: &Table, event: Event, before: bool) -> bool {
        table.triggers.iter().any(|t| t.row && t.before == before && t.fires_on(event.name()))
    }

    /// Queues the AFTER ROW triggers of a row written, for the end of the statement. The
    /// rows a foreign key's action changed (`Cause::Action`) run theirs after the statement's
    /// own AFTER triggers, as in PostgreSQL, whose actions are themselves AFTER triggers of the
    /// statement queueing what they change behind them.
    pub(crate) fn after_row(
        &mut self,
        table: &Arc<Table>,
        event: Event,
        (new, old): (Option<&[Value]>, Option<&[Value]>),
        set: Option<&[usize]>,
        cause: Cause,
    ) {
        if !table.triggers.iter().any(|t| !t.before && t.row && Self::fires(t, table, event, set)) {
            return;
        }
        self.triggers.pending.rows.push(AfterRow {
            table: table.clone(),
            event,
            new: new.map(<[Value]>::to_vec),
            old: old.map(<[Value]>::to_vec),
            set: set.map(<[usize]>::to_vec),
            cascaded: cause == Cause::Action,
        });
    }

    /// Runs the statement-level triggers of `event` on `table` (BEFORE or AFTER).
    pub(crate) fn statement_triggers(
        &mut self,
        table: &Table,
        event: Event,
        before: bool,
        env: &dyn Env,
    ) -> Result<()> {
        for trigger in &table.triggers {
            if trigger.row || trigger.before != before || !trigger.fires_on(event.name()) {
                continue;
            }
            self.call(table, trigger, event, None, None, env)?;
        }
        Ok(())
    }

    /// The end of a statement's writes: the AFTER ROW triggers queued, in the order the
    /// rows were written, then the AFTER STATEMENT triggers of `events` on `table`.
    pub(crate) fn end_of_statement(
        &mut self,
        table: &Table,
        events: &[Event],
        env: &dyn Env,
    ) -> Result<()> {
        let (cascaded, direct): (Vec<AfterRow>, Vec<AfterRow>) =
            std::mem::take(&mut self.triggers.pending.rows).into_iter().partition(|r| r.cascaded);
        self.after_rows(direct, env)?;
        for &event in events {
            self.statement_triggers(table, event, false, env)?;
        }
        self.after_rows(cascaded, env)
    }

    fn after_rows(&mut self, rows: Vec<AfterRow>, env: &dyn Env) -> Result<()> {
        for r in rows {
            for trigger in &r.table.triggers {
                if trigger.before
                    || !trigger.row
                    || !Self::fires(trigger, &r.table, r.event, r.set.as_deref())
                {
                    continue;
                }
                self.call(&r.table, trigger, r.event, r.new.as_deref(), r.old.as_deref(), env)?;
            }
        }
        Ok(())
    }
}

/// `pg_trigger.tgtype`: ROW 1, BEFORE 2, INSERT 4, DELETE 8, UPDATE 16.
pub(crate) fn tgtype(t: &Trigger) -> i16 {
    let bit = |on: bool, b: i16| if on { b } else { 0 };
    bit(t.row, 1) | bit(t.before, 2) | bit(t.insert, 4) | bit(t.delete, 8) | bit(t.update, 16)
}

/// `pg_get_triggerdef`: the trigger as CREATE TRIGGER (its table qualified, psql's pretty
/// form drops `public.`; its function qualified when `public` is off the search path, as
/// under pg_dump).
pub(crate) fn definition(table: &Table, t: &Trigger, qualify: bool) -> String {
    use crate::bind::quote_ident;
    let mut events = Vec::new();
    if t.insert {
        events.push("INSERT".to_string());
    }
    if t.delete {
        events.push("DELETE".to_string());
    }
    if t.update {
        let mut e = "UPDATE".to_string();
        if !t.update_of.is_empty() {
            let cols: Vec<String> = t.update_of.iter().map(|c| quote_ident(c)).collect();
            e.push_str(&format!(" OF {}", cols.join(", ")));
        }
        events.push(e);
    }
    let mut def = format!(
        "CREATE TRIGGER {} {} {} ON {}.{} FOR EACH {}",
        quote_ident(&t.name),
        if t.before { "BEFORE" } else { "AFTER" },
        events.join(" OR "),
        quote_ident(crate::catalog::schema_of(&table.name)),
        quote_ident(crate::catalog::unqualified(&table.name)),
        if t.row { "ROW" } else { "STATEMENT" },
    );
    if let Some(w) = &t.when {
        def.push_str(&format!(" WHEN ({w})"));
    }
    let args: Vec<String> = t.args.iter().map(|a| format!("'{}'", a.replace('\'', "''"))).collect();
    def.push_str(&format!(
        " EXECUTE FUNCTION {}{}({})",
        if qualify { "public." } else { "" },
        quote_ident(&t.function),
        args.join(", ")
    ));
    def
}

/// `pg_get_functiondef`: the function as CREATE OR REPLACE FUNCTION.
pub(crate) fn function_definition(f: &Function) -> String {
    let mut tag = "function".to_string();
    while f.body.contains(&format!("${tag}$")) {
        tag.push('_');
    }
    format!(
        "CREATE OR REPLACE FUNCTION public.{}()\n RETURNS trigger\n LANGUAGE plpgsql\nAS ${tag}${}${tag}$\n",
        crate::bind::quote_ident(&f.name),
        f.body
    )
}

/// A trigger's WHEN condition with column `old` of its table renamed `new` (`NEW.old`,
/// `OLD.old`), as RENAME COLUMN leaves it.
pub(crate) fn rename_in_when(when: &str, old: &str, new: &str) -> Result<String> {
    let mut stmt = one_statement(&format!("SELECT ({when})"))?;
    let _ = ast::visit_expressions_mut(&mut stmt, |e| {
        if let ast::Expr::CompoundIdentifier(parts) = e {
            if parts.len() == 2 {
                let record = crate::bind::ident(&parts[0]);
                if (record == "new" || record == "old") && crate::bind::ident(&parts[1]) == old {
                    parts[1] = ast::Ident::new(crate::bind::quote_ident(new));
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    let ast::Statement::Query(q) = &stmt else { return Ok(when.to_string()) };
    let ast::SetExpr::Select(s) = q.body.as_ref() else { return Ok(when.to_string()) };
    match s.projection.first() {
        Some(ast::SelectItem::UnnamedExpr(ast::Expr::Nested(e))) => Ok(e.to_string()),
        _ => Ok(when.to_string()),
    }
}

impl Writer<'_> {
    /// `ALTER TABLE … {ENABLE | DISABLE} TRIGGER {name | ALL | USER}`.
    pub(crate) fn enable_trigger(
        &self,
        t: &mut Table,
        name: &ast::Ident,
        enable: bool,
    ) -> Result<()> {
        let every = name.quote_style.is_none()
            && (name.value.eq_ignore_ascii_case("all") || name.value.eq_ignore_ascii_case("user"));
        let name = crate::bind::ident(name);
        let mut found = false;
        for tr in &mut t.triggers {
            if every || tr.name == name {
                tr.disabled = !enable;
                found = true;
            }
        }
        if !found && !every {
            return Err(SqlError::new(
                code::UNDEFINED_OBJECT,
                format!(
                    "trigger \"{name}\" for table \"{}\" does not exist",
                    crate::catalog::unqualified(&t.name)
                ),
            ));
        }
        Ok(())
    }
}
