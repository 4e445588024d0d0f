//! PL/pgSQL programs: binding a function's body and running it.
//!
//! A body (parsed by `parse::do_block`) is bound once into a [`Program`]: every expression
//! and SQL statement in it is planned as a query whose parameters are the program's
//! *frame* — for a trigger function `NEW`'s columns, `OLD`'s columns, `TG_OP` and the other
//! `TG_` variables; for any function its arguments; then `FOUND`, the declared variables and
//! the loop variables — with each reference to one of them rewritten into its parameter
//! (PL/pgSQL's own approach), so conditions may hold subqueries and statements read and
//! write other tables in the same transaction.
//!
//! As PostgreSQL plans a PL/pgSQL statement only when it first runs, a statement whose
//! binding fails on a name the catalog lacks (a table the function makes before it, a
//! misspelling in a branch never taken) does not fail the function: it and the rest of its
//! block become a [`Late`] step, bound each time it runs. The body of a `FOR rec IN
//! EXECUTE` loop is bound that way too, once the dynamic query's columns give the record
//! its fields.
//!
//! A program runs on a [`Host`]: the statement's writer (a trigger, a `CALL`, a function
//! called where the statement writes nothing else), which runs its INSERT, UPDATE and DELETE
//! as statements of their own, or a query's executor, which runs its reads only.

use std::cell::RefCell;
use std::ops::ControlFlow;

use sqlparser::ast;

use crate::bind::dml::{plan_delete, plan_insert, plan_update, DeletePlan, InsertPlan, UpdatePlan};
use crate::bind::Planner;
use crate::catalog::{Catalog, Table};
use crate::error::{code, Result, SqlError};
use crate::exec::constraints::NoSystemTables;
use crate::exec::init::InitPlans;
use crate::exec::select::{execute_select, Exec, ExecLimits, TxnCell};
use crate::exec::write::Writer;
use crate::expr::{assign, Ctx, Env};
use crate::parse::do_block::{
    self, refused_in_function as refused, FunctionBody, Level, Raise, Stmt,
};
use crate::plan::SelectPlan;
use crate::prepared::Dependencies;
use crate::session::{Notice, Output};
use crate::types::{DataType, Value};
use kiln_engine::Transaction;

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

fn tg_type(k: usize) -> DataType {
    match TG_VARS[k] {
        "tg_nargs" => DataType::Int4,
        "tg_argv" => DataType::Array(&DataType::Text),
        "found" => DataType::Bool,
        _ => DataType::Text,
    }
}

/// A one-column query: an expression of the frame.
#[derive(Clone)]
pub(crate) struct Query {
    plan: Box<SelectPlan>,
    ty: DataType,
}

/// A bound function body: a trigger function bound to one trigger of one table, or a
/// function's or procedure's body.
pub(crate) struct Program {
    /// The table's column count for a trigger function (`NEW` and `OLD` each take that many
    /// slots); 0 otherwise.
    pub(crate) width: usize,
    /// How many slots its frame has (the loop variables' last).
    pub(crate) slots: usize,
    /// The slots of `FOUND`, of the last statement's row count and of the value returned.
    found: usize,
    row_count: usize,
    result: usize,
    /// The declared variables: slot, type, initial value, NOT NULL.
    declared: Vec<(usize, DataType, Option<Query>, bool)>,
    /// The trigger's WHEN condition.
    pub(crate) when: Option<Query>,
    /// The body.
    body: Vec<Step>,
    /// Whether a step writes (INSERT, UPDATE or DELETE) or calls a function that does: only
    /// a writer runs its writes.
    pub(crate) writes: bool,
    /// A function's: the slots its call's arguments go to (its IN and INOUT arguments').
    inputs: Vec<usize>,
    /// A function's: what its call gives.
    shape: Shape,
}

/// What a call of a function gives: one value, a row of columns, or a set of either.
///
/// As a value (`Program::call`), a set is an array of its rows, and a row of columns an
/// array of their values (a set of such rows, an array of arrays); the executor reads a
/// call in FROM or in a select list by that shape.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Shape {
    /// RETURNS SETOF / TABLE: a set of rows.
    pub(crate) set: bool,
    /// The value's type (`None`: nothing — void, a procedure), for a function whose rows
    /// are not of columns.
    pub(crate) value: Option<DataType>,
    /// The columns of its rows, for one returning a row of two or more OUT arguments or
    /// `RETURNS TABLE` columns, or a table's row type: name and type.
    pub(crate) columns: Option<Vec<(String, DataType)>>,
    /// The name of the one column a value makes in FROM (a single OUT argument's, or the
    /// function's).
    pub(crate) column: String,
    /// The slots of its OUT, INOUT and TABLE arguments (a PL/pgSQL function's): what
    /// `RETURN` and `RETURN NEXT` without an expression give.
    pub(crate) out: Vec<usize>,
}

impl Shape {
    /// The types of its rows' columns (none for a void function).
    pub(crate) fn types(&self) -> Vec<DataType> {
        match (&self.columns, self.value) {
            (Some(c), _) => c.iter().map(|(_, t)| *t).collect(),
            (None, Some(t)) => vec![t],
            (None, None) => vec![],
        }
    }

    /// A row of a query converted to the types of its rows' columns.
    fn converted(&self, row: Vec<Value>, env: &dyn Env) -> Result<Vec<Value>> {
        row.into_iter().zip(self.types()).map(|(v, t)| assign(v, t, env.style())).collect()
    }

    /// The value of a row (of `types()`): the one value, or the array of the columns'.
    fn row_value(&self, mut row: Vec<Value>) -> Value {
        if self.columns.is_some() {
            Value::Array(row)
        } else {
            row.pop().unwrap_or(Value::Null)
        }
    }
}

pub(crate) enum Step {
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
    Merge(Box<crate::bind::merge::MergePlan>),
    Return(Returned),
    /// `RETURN [e]` of a function (none in one returning void), or an SQL function's last
    /// query, whose first row's first column is the value: converted to `ty`.
    ReturnValue(Option<Query>, DataType),
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
    /// `BEGIN … EXCEPTION WHEN … THEN … END`: the block, run as a subtransaction, and its
    /// handlers.
    Guarded {
        body: Vec<Step>,
        handlers: Vec<(do_block::Handler, Vec<Step>)>,
    },
    /// `FOR target IN query LOOP … END LOOP`: the query, the slots each row is assigned to,
    /// the body.
    ForQuery {
        plan: Box<SelectPlan>,
        targets: Vec<(usize, DataType)>,
        body: Vec<Step>,
    },
    /// An INSERT, UPDATE or DELETE with `RETURNING … INTO`: the write, and the slots its
    /// first returned row is assigned to (NULLs when it wrote none).
    WriteInto(Box<Step>, Vec<(usize, DataType)>),
    /// `RETURN NEXT expr` of a function returning a set of values: the value joins the set.
    ReturnNext(Query),
    /// The values of these slots as a row: `RETURN NEXT` of the OUT arguments or `RETURN
    /// NEXT r` of a record variable (`next`: the row joins the set), `RETURN r` of a
    /// function returning a row (the row is returned).
    ReturnSlots {
        slots: Vec<usize>,
        next: bool,
    },
    /// `RETURN QUERY query`, and an SQL function's last query when it returns a set: the
    /// query's rows join the set.
    ReturnQuery(Box<SelectPlan>),
    /// An SQL function's last query when it returns a row of columns: its first row (NULL
    /// when it has none) is returned.
    ReturnRow(Box<SelectPlan>),
    /// An SQL function's last statement, an INSERT, UPDATE or DELETE with RETURNING: the
    /// rows it returned are the set (or the first of them the row or value) returned.
    ReturnWrite(Box<Step>),
    /// `EXECUTE string [INTO [STRICT] targets] [USING expressions]`: the string's value is
    /// parsed and bound when the step runs, the USING values its `$1`, `$2`, ….
    Execute {
        sql: Query,
        using: Vec<Query>,
        into: Vec<(usize, DataType)>,
        strict: bool,
    },
    /// `RETURN QUERY EXECUTE string [USING expressions]`: the dynamic query's rows join the
    /// set.
    ReturnExecute {
        sql: Query,
        using: Vec<Query>,
    },
    /// Statements bound each time they run (see [`Late`]).
    Late(Box<Late>),
    /// A schema statement (CREATE TABLE, DROP, ALTER, TRUNCATE, …), run as written.
    Utility(String),
    /// A statement and the definitions its binding read: once the function ran a schema
    /// statement, they are checked before it runs (a plan of a changed table is never
    /// run).
    Checked(Box<Step>, Dependencies),
    /// `FOR target IN EXECUTE string [USING expressions] LOOP … END LOOP`: the string's
    /// value is the query, parsed and bound when the step runs.
    ForExecute {
        sql: Query,
        using: Vec<Query>,
        target: ForTarget,
    },
}

/// Statements of a PL/pgSQL function bound when they run, as PostgreSQL plans each
/// statement when it first runs: from one whose binding with the function failed on a name
/// the catalog did not have then (a table the function itself makes, a field of a record a
/// dynamic query fills) to the end of its block, or the body of a loop over a dynamic
/// query's rows into a record. Bound again at every run (what they name may be made and
/// dropped between runs), with the names in scope where they stand; the slots they add go
/// past every slot in use and are let go when they end.
pub(crate) struct Late {
    frame: Frame,
    stmts: Vec<Stmt>,
    /// Why they were not bound with the function (none: a loop's body over a dynamic
    /// query), what a host that cannot bind answers.
    unbound: Option<SqlError>,
}

/// What a `FOR … IN EXECUTE` loop assigns each row to.
pub(crate) enum ForTarget {
    /// A variable (a one-column query): its slot and type, and the body, bound with the
    /// function.
    Slot(usize, DataType, Vec<Step>),
    /// A record variable, whose fields are the query's columns: its name, and the body,
    /// bound once the query ran.
    Record(String, Box<Late>),
}

/// Whether a bound statement runs a schema statement (its own, or one in its blocks and
/// loops).
fn runs_ddl(step: &Step) -> bool {
    match step {
        Step::Utility(_) => true,
        Step::Checked(s, _) => runs_ddl(s),
        Step::If(arms, otherwise) => {
            arms.iter().any(|(_, b)| b.iter().any(runs_ddl)) || otherwise.iter().any(runs_ddl)
        }
        Step::Guarded { body, handlers } => {
            body.iter().any(runs_ddl) || handlers.iter().any(|(_, b)| b.iter().any(runs_ddl))
        }
        Step::Block(b)
        | Step::Loop { body: b, .. }
        | Step::ForRange { body: b, .. }
        | Step::ForQuery { body: b, .. }
        | Step::ForExecute { target: ForTarget::Slot(_, _, b), .. } => b.iter().any(runs_ddl),
        _ => false,
    }
}

/// Whether a statement whose binding failed with `e` is bound when it runs instead: the
/// errors of names the catalog (or a record's shape) may have by then.
fn bound_when_run(e: &SqlError) -> bool {
    matches!(
        e.code,
        code::UNDEFINED_TABLE
            | code::UNDEFINED_COLUMN
            | code::UNDEFINED_FUNCTION
            | code::UNDEFINED_OBJECT
            | code::UNDEFINED_SCHEMA
            | "55000"
    )
}

impl Step {
    /// The columns an INSERT, UPDATE or DELETE step's RETURNING gives (`None` for any
    /// other step, or one without RETURNING).
    fn returning_columns(&self) -> Option<&[(String, DataType)]> {
        let returning = match self {
            Step::Insert(p) => p.returning.as_ref(),
            Step::Update(p) => p.returning.as_ref(),
            Step::Delete(p) => p.returning.as_ref(),
            _ => None,
        };
        returning.map(|r| r.columns.as_slice())
    }
}

/// What a program returned.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Returned {
    /// A function's value, in its result slot.
    Value,
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

pub(crate) enum Flow {
    Next,
    Return(Returned),
    /// EXIT: out of the innermost loop.
    Exit,
    /// CONTINUE: to the innermost loop's next iteration.
    Continue,
}

/// A record variable's fields: name and slot.
type Fields = Vec<(String, usize)>;

/// What a program is bound for.
#[derive(Clone)]
pub(crate) enum Kind {
    /// A trigger function, for a trigger of this table.
    Trigger(std::sync::Arc<Table>),
    /// A function or procedure: its name, its arguments of every mode (name, type; a
    /// PL/pgSQL function's OUT arguments are variables too) and what it returns.
    /// `inputs` are the positions of the arguments a call gives.
    Function {
        name: String,
        args: Vec<(Option<String>, DataType)>,
        inputs: Vec<usize>,
        shape: Shape,
    },
}

/// The names a function's code can refer to, and their slots.
///
/// A trigger function's frame is `NEW`'s columns, `OLD`'s, the `TG_` variables (`FOUND`
/// last); a function's is its arguments (so `$n` is slot n - 1), then `FOUND`. Both go on
/// with the last statement's row count (which no name reaches), the value returned, then
/// a handler's `SQLSTATE` and `SQLERRM`, then the declared variables and the loop variables.
#[derive(Clone)]
pub(crate) struct Frame {
    kind: Kind,
    /// Variables: name, slot, constant (a function's named arguments first).
    vars: Vec<(String, usize, bool)>,
    types: Vec<DataType>,
    found: usize,
    /// The slots of variables declared NOT NULL.
    not_null: Vec<usize>,
    /// What the program's binding depended on (when it may be used again).
    pub(crate) deps: Dependencies,
    /// Whether `NEW` / `OLD` were referred to (WHEN's checks).
    used_new: bool,
    used_old: bool,
    /// Whether a statement calls a function that writes.
    writes: bool,
    /// Record variables: name, and the slots of their fields, by name, once a query (FOR …
    /// IN, SELECT … INTO) gave them a shape.
    records: Vec<(String, Option<Fields>)>,
}

/// A frame's names and slots before a statement was bound ([`Frame::mark`]).
struct FrameMark {
    vars: usize,
    types: usize,
    records: Vec<(String, Option<Fields>)>,
    used: (bool, bool),
}

impl Frame {
    pub(crate) fn new(kind: Kind) -> Frame {
        let mut types = Vec::new();
        let mut vars = Vec::new();
        match &kind {
            Kind::Trigger(table) => {
                types.extend(table.columns.iter().map(|c| c.ty));
                types.extend(table.columns.iter().map(|c| c.ty));
                types.extend((0..TG_VARS.len()).map(tg_type));
            }
            Kind::Function { args, .. } => {
                for (k, (name, ty)) in args.iter().enumerate() {
                    if let Some(n) = name {
                        vars.push((n.clone(), k, false));
                    }
                    types.push(*ty);
                }
                types.push(DataType::Bool);
            }
        }
        let found = types.len() - 1;
        // The row count, the value returned, and a handler's SQLSTATE and SQLERRM.
        types.push(DataType::Int8);
        types.push(DataType::Unknown);
        types.push(DataType::Text);
        types.push(DataType::Text);
        Frame {
            kind,
            vars,
            types,
            found,
            not_null: Vec::new(),
            deps: Dependencies::new(),
            used_new: false,
            used_old: false,
            writes: false,
            records: Vec::new(),
        }
    }

    /// What binding a statement may change in the frame, to undo it ([`Frame::restore`]).
    fn mark(&self) -> FrameMark {
        FrameMark {
            vars: self.vars.len(),
            types: self.types.len(),
            records: self.records.clone(),
            used: (self.used_new, self.used_old),
        }
    }

    /// The frame as it was at `mark` (what it depends on is kept).
    fn restore(&mut self, mark: FrameMark) {
        self.vars.truncate(mark.vars);
        self.types.truncate(mark.types);
        self.records = mark.records;
        (self.used_new, self.used_old) = mark.used;
    }

    /// Gives record `name` the columns of a query: their slots.
    fn shape_record(
        &mut self,
        name: &str,
        columns: &[(String, DataType)],
    ) -> Vec<(usize, DataType)> {
        let mut fields = Vec::with_capacity(columns.len());
        let mut slots = Vec::with_capacity(columns.len());
        for (c, ty) in columns {
            let slot = self.types.len();
            self.types.push(*ty);
            fields.push((c.clone(), slot));
            slots.push((slot, *ty));
        }
        if let Some(r) = self.records.iter_mut().rev().find(|(n, _)| n == name) {
            r.1 = Some(fields);
        }
        slots
    }

    /// Whether `name` is a record variable (and not a scalar variable declared later).
    fn is_record_var(&self, name: &str) -> bool {
        self.declared(name).is_none() && self.records.iter().any(|(n, _)| n == name)
    }

    /// The slots of a record variable's fields, in order.
    fn record_fields(&self, record: &str) -> Result<Vec<usize>> {
        let shape = self.records.iter().rev().find(|(n, _)| n == record).and_then(|r| r.1.as_ref());
        let Some(fields) = shape else {
            return Err(SqlError::new("55000", format!("record \"{record}\" is not assigned yet"))
                .detail("The tuple structure of a not-yet-assigned record is indeterminate."));
        };
        Ok(fields.iter().map(|(_, slot)| *slot).collect())
    }

    /// The slot of `record.field`.
    fn record_field(&self, record: &str, field: &str) -> Result<usize> {
        let Some((_, shape)) = self.records.iter().rev().find(|(n, _)| n == record) else {
            return Err(unknown_variable(record));
        };
        let Some(fields) = shape else {
            return Err(SqlError::new("55000", format!("record \"{record}\" is not assigned yet"))
                .detail("The tuple structure of a not-yet-assigned record is indeterminate."));
        };
        fields.iter().find(|(n, _)| n == field).map(|(_, slot)| *slot).ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("record \"{record}\" has no field \"{field}\""),
            )
        })
    }

    /// Declares a variable: its slot.
    fn declare(&mut self, name: &str, ty: DataType, constant: bool) -> usize {
        let slot = self.types.len();
        self.vars.push((name.to_string(), slot, constant));
        self.types.push(ty);
        slot
    }

    fn width(&self) -> usize {
        match &self.kind {
            Kind::Trigger(table) => table.columns.len(),
            Kind::Function { .. } => 0,
        }
    }

    fn table(&self) -> Option<&Table> {
        match &self.kind {
            Kind::Trigger(table) => Some(table),
            Kind::Function { .. } => None,
        }
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

    /// The slot of a one-part name: a variable, `FOUND`, or a trigger's `TG_` variable.
    fn var(&self, name: &str) -> Option<usize> {
        if let Some((slot, _)) = self.declared(name) {
            return Some(slot);
        }
        match name {
            "found" => return Some(self.found),
            "sqlstate" => return Some(self.found + 3),
            "sqlerrm" => return Some(self.found + 4),
            _ => {}
        }
        match self.kind {
            Kind::Trigger(_) => TG_VARS.iter().position(|v| *v == name).map(|k| self.tg_slot(k)),
            Kind::Function { .. } => None,
        }
    }

    /// Whether `name` is `NEW` or `OLD` of a trigger function.
    fn is_record(&self, name: &str) -> bool {
        matches!(self.kind, Kind::Trigger(_)) && (name == "new" || name == "old")
    }

    /// The slot of `NEW.col` / `OLD.col`.
    fn field(&mut self, record: &str, col: &str) -> Result<usize> {
        let Some(i) = self.table().and_then(|t| t.columns.iter().position(|c| c.name == col))
        else {
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
        let argv = match self.kind {
            Kind::Trigger(_) => {
                self.expand_records(stmt)?;
                Some(self.tg_slot(TG_VARS.iter().position(|v| *v == "tg_argv").expect("listed")))
            }
            Kind::Function { .. } => None,
        };
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
        let Some(table) = self.table() else { return Ok(()) };
        let columns: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
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

    fn rewritten(&mut self, e: &ast::Expr, argv: Option<usize>) -> Result<Option<ast::Expr>> {
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
                if self.is_record(&n) {
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
                if self.is_record(&record) {
                    Some(Self::placeholder(self.field(&record, &name(&parts[1]))?))
                } else if self.is_record_var(&record) {
                    Some(Self::placeholder(self.record_field(&record, &name(&parts[1]))?))
                } else {
                    match &self.kind {
                        // `function.argument`
                        Kind::Function { name: f, args, .. } if *f == record => {
                            let arg = name(&parts[1]);
                            let k = args.iter().position(|(n, _)| n.as_deref() == Some(&arg));
                            k.map(Self::placeholder)
                        }
                        _ => None,
                    }
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
                if argv.is_some_and(|argv| {
                    matches!(root.as_ref(), ast::Expr::Value(v)
                    if v.value == ast::Value::Placeholder(format!("${}", argv + 1)))
                }) =>
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

/// PL/pgSQL's rules shared by a function's bound program and a DO block's interpreter
/// (`exec::do_block`): their errors and checks, written once.
pub(crate) fn unknown_variable(name: impl std::fmt::Display) -> SqlError {
    SqlError::syntax(format!("\"{name}\" is not a known variable"))
}

/// An assignment to a CONSTANT variable (22005, as PL/pgSQL reports it).
pub(crate) fn constant_variable(name: impl std::fmt::Display) -> SqlError {
    SqlError::new("22005", format!("variable \"{name}\" is declared CONSTANT"))
}

/// A SELECT whose rows go nowhere.
pub(crate) fn no_destination() -> SqlError {
    SqlError::syntax("query has no destination for result data")
        .hint("If you want to discard the results of a SELECT, use PERFORM instead.")
}

/// EXECUTE of a NULL string.
pub(crate) fn null_execute() -> SqlError {
    SqlError::new("22004", "query string argument of EXECUTE is null")
}

/// INTO STRICT of `rows` rows: exactly one, or P0002 / P0003 (with PL/pgSQL's hint at LIMIT
/// 1 when `hint`: for SELECT … INTO, not for EXECUTE).
pub(crate) fn strict_rows(rows: usize, hint: bool) -> Result<()> {
    match rows {
        1 => Ok(()),
        0 => Err(SqlError::new("P0002", "query returned no rows")),
        _ => {
            let e = SqlError::new("P0003", "query returned more than one row");
            Err(if hint {
                e.hint("Make sure the query returns a single row, or use LIMIT 1.")
            } else {
                e
            })
        }
    }
}

/// A bound (`what`: lower bound, upper bound, BY value) of an integer FOR loop: the value
/// as an integer, never NULL.
pub(crate) fn for_bound(v: Value, what: &str, style: crate::style::Style) -> Result<i64> {
    match assign(v, DataType::Int4, style)? {
        Value::Int(i) => Ok(i),
        _ => Err(SqlError::new("22004", format!("{what} of FOR loop cannot be null"))),
    }
}

/// An integer FOR loop's step, which must be positive.
pub(crate) fn for_step(by: i64) -> Result<i64> {
    if by <= 0 {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            "BY value of FOR loop must be greater than zero",
        ));
    }
    Ok(by)
}

/// The single statement of `sql`.
pub(crate) fn one_statement(sql: &str) -> Result<ast::Statement> {
    let mut stmts = crate::parse::parse(sql)?;
    if stmts.len() != 1 {
        return Err(SqlError::syntax(format!("expected one statement in \"{sql}\"")));
    }
    Ok(stmts.remove(0))
}

fn null_into_not_null() -> SqlError {
    SqlError::new("22004", "null value cannot be assigned to a variable declared NOT NULL")
}

/// The type a declaration names.
pub(crate) fn type_named(text: &str) -> Result<ast::DataType> {
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

/// The most function bodies bound inside one another (a function whose body calls a
/// function whose body calls …).
const NESTING_MAX: usize = 16;

/// Binds programs, reading definitions through the statement's transaction.
pub(crate) struct Binder<'a> {
    pub(crate) txn: &'a mut Transaction,
    pub(crate) catalog: &'a Catalog,
    pub(crate) database: &'a str,
    pub(crate) env: &'a dyn Env,
    /// The functions whose bodies are being bound around this one, outermost first.
    pub(crate) routines: crate::exec::routines::Binding,
    /// An SQL function's argument names and slots: its queries' planners take a name no
    /// column has for the argument (where PL/pgSQL's variables are rewritten first).
    pub(crate) sql_args: Option<(String, Vec<(String, usize)>)>,
    /// The statement's count of function bodies bound (`Planner::routines_bound`).
    pub(crate) bound: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Whether a PL/pgSQL statement naming what the catalog does not have is bound when
    /// it runs ([`Late`]); false when binding it then.
    pub(crate) defer: bool,
}

impl Binder<'_> {
    /// Binds with a planner whose parameters are the frame's slots, and records what the
    /// binding depended on.
    fn planned<T>(
        &mut self,
        frame: &mut Frame,
        bind: impl FnOnce(&mut Planner) -> Result<T>,
    ) -> Result<T> {
        let mut planner = Planner::new(
            self.txn,
            self.catalog,
            self.database,
            frame.types.clone(),
            &NoSystemTables,
            self.env,
        );
        planner.routines = self.routines.clone();
        planner.routine_args = self.sql_args.clone();
        planner.routines_bound = self.bound.clone();
        let bound = bind(&mut planner)?;
        frame.deps.absorb(&planner);
        frame.writes |= planner.calls_writing;
        Ok(bound)
    }

    /// Binds an expression of the frame as a one-column query.
    fn expression(&mut self, frame: &mut Frame, text: &str) -> Result<Query> {
        let mut stmt = one_statement(&format!("SELECT ({text})"))?;
        frame.rewrite(&mut stmt)?;
        let ast::Statement::Query(q) = &stmt else {
            return Err(SqlError::syntax(format!("syntax error in expression \"{text}\"")));
        };
        let plan = self.planned(frame, |p| p.query(q, None))?;
        let ty = plan.columns.first().map_or(DataType::Unknown, |c| c.1);
        Ok(Query { plan: Box::new(plan), ty })
    }

    /// Binds a PL/pgSQL body (and a trigger's WHEN condition) for `kind`: the program and
    /// what its binding depended on.
    pub(crate) fn plpgsql(
        &mut self,
        kind: Kind,
        body: &str,
        when: Option<&str>,
    ) -> Result<(Program, Dependencies)> {
        if self.routines.len() > NESTING_MAX {
            return Err(nested_too_deep());
        }
        let body: FunctionBody = do_block::function_body(body)?;
        let mut frame = Frame::new(kind);
        let mut declared = Vec::new();
        for d in &body.declarations {
            if d.ty.eq_ignore_ascii_case("record") {
                // Its fields are the columns of the query that first fills it.
                if d.default.is_some() || d.not_null || d.constant {
                    return Err(refused("a record variable with a default, NOT NULL or CONSTANT"));
                }
                frame.records.push((d.name.clone(), None));
                continue;
            }
            let ty = crate::bind::resolve_type(
                &type_named(&d.ty)?,
                self.catalog,
                self.txn,
                self.database,
            )?;
            // Each variable's initial value may read the variables declared before it.
            let default = match &d.default {
                Some(e) => Some(self.expression(&mut frame, e)?),
                None => None,
            };
            let slot = frame.declare(&d.name, ty, d.constant);
            if d.not_null {
                frame.not_null.push(slot);
            }
            declared.push((slot, ty, default, d.not_null));
        }
        let when = match when {
            Some(w) => Some(self.expression(&mut frame, w)?),
            None => None,
        };
        // The outermost block is a block like any other (its handlers too).
        let steps = self.steps(&mut frame, &[Stmt::Block(body.body.clone())])?;
        Ok(program(frame, declared, when, steps))
    }

    /// Binds a trigger's WHEN condition alone: its type, and whether it reads `NEW` and
    /// `OLD`.
    pub(crate) fn trigger_condition(
        &mut self,
        table: &Table,
        when: &str,
    ) -> Result<(DataType, bool, bool)> {
        let mut frame = Frame::new(Kind::Trigger(std::sync::Arc::new(table.clone())));
        let q = self.expression(&mut frame, when)?;
        Ok((q.ty, frame.used_new, frame.used_old))
    }

    /// Binds an SQL function's body: its statements run in order, the last one giving what
    /// the function returns — its first row (a query's first column, for a function of one
    /// value; nothing for one returning void), or all its rows for a set. `args` are the
    /// arguments a call gives.
    pub(crate) fn sql(
        &mut self,
        name: &str,
        args: Vec<(Option<String>, DataType)>,
        shape: Shape,
        body: &str,
    ) -> Result<(Program, Dependencies)> {
        if self.routines.len() > NESTING_MAX {
            return Err(nested_too_deep());
        }
        let named =
            args.iter().enumerate().filter_map(|(k, (n, _))| n.clone().map(|n| (n, k))).collect();
        self.sql_args = Some((name.to_string(), named));
        let inputs = (0..args.len()).collect();
        let returns = shape.types();
        let gives = shape.value.is_some() || shape.columns.is_some();
        let (set, row) = (shape.set, shape.columns.is_some());
        let declared = result_name(&shape);
        let mut frame = Frame::new(Kind::Function {
            name: name.to_string(),
            args: vec![],
            inputs,
            shape: Shape { out: vec![], ..shape },
        });
        // The arguments are parameters of the planners (not variables PL/pgSQL-style).
        frame.types.splice(0..0, args.iter().map(|(_, t)| *t));
        frame.found += args.len();
        let mismatch = |detail: &str| {
            SqlError::new(
                code::INVALID_FUNCTION_DEFINITION,
                format!("return type mismatch in function declared to return {declared}"),
            )
            .detail(detail.to_string())
        };
        // The last statement's columns must be the function's.
        let fits = |columns: &[(String, DataType)]| -> Result<()> {
            match columns.len().cmp(&returns.len()) {
                std::cmp::Ordering::Equal => Ok(()),
                _ if !row => Err(mismatch("Final statement must return exactly one column.")),
                std::cmp::Ordering::Greater => {
                    Err(mismatch("Final statement returns too many columns."))
                }
                std::cmp::Ordering::Less => {
                    Err(mismatch("Final statement returns too few columns."))
                }
            }
        };
        let statements = crate::parse::parse(body)?;
        let mut steps = Vec::with_capacity(statements.len());
        // What each statement's binding read, by the position of its first step.
        let mut read: Vec<Option<Dependencies>> = Vec::with_capacity(statements.len());
        let last = statements.len().saturating_sub(1);
        for (k, stmt) in statements.iter().enumerate() {
            let first = steps.len();
            let outer = std::mem::replace(&mut frame.deps, Dependencies::new());
            let step = match stmt {
                ast::Statement::Query(q) if k == last && gives => {
                    let plan = self.planned(&mut frame, |p| p.query(q, None))?;
                    fits(&plan.columns)?;
                    if set {
                        steps.push(Step::ReturnQuery(Box::new(plan)));
                        Step::ReturnValue(None, DataType::Unknown)
                    } else if row {
                        Step::ReturnRow(Box::new(plan))
                    } else {
                        let ty = returns[0];
                        let q = Query { ty: plan.columns[0].1, plan: Box::new(plan) };
                        Step::ReturnValue(Some(q), ty)
                    }
                }
                ast::Statement::Query(q) => {
                    Step::Perform(Box::new(self.planned(&mut frame, |p| p.query(q, None))?))
                }
                ast::Statement::Insert(ins) => {
                    Step::Insert(Box::new(self.planned(&mut frame, |p| plan_insert(p, ins))?))
                }
                ast::Statement::Update(u) => {
                    Step::Update(Box::new(self.planned(&mut frame, |p| plan_update(p, u))?))
                }
                ast::Statement::Delete(d) => {
                    Step::Delete(Box::new(self.planned(&mut frame, |p| plan_delete(p, d))?))
                }
                ast::Statement::Merge(m) => Step::Merge(Box::new(
                    self.planned(&mut frame, |p| crate::bind::merge::plan_merge(p, m))?,
                )),
                // Bound with the others, before any runs (later statements do not see what
                // it makes, as in PostgreSQL).
                other if schema_statement(other) => Step::Utility(other.to_string()),
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the statement {} in an SQL function",
                        other.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" ")
                    )))
                }
            };
            // A last INSERT, UPDATE or DELETE with RETURNING gives the function's rows.
            let step = match step.returning_columns() {
                Some(columns) if k == last && gives => {
                    fits(columns)?;
                    Step::ReturnWrite(Box::new(step))
                }
                _ => step,
            };
            steps.push(step);
            let deps = std::mem::replace(&mut frame.deps, outer);
            frame.deps.extend(&deps);
            read.resize_with(steps.len(), || None);
            read[first] = Some(deps);
        }
        if gives
            && !matches!(
                steps.last(),
                Some(Step::ReturnValue(..) | Step::ReturnRow(_) | Step::ReturnWrite(_))
            )
        {
            return Err(mismatch(
                "Function's final statement must be SELECT or INSERT/UPDATE/DELETE RETURNING.",
            ));
        }
        // Once a statement changed the schema, the others' definitions are checked first.
        let steps = steps
            .into_iter()
            .zip(read)
            .map(|(step, deps)| match deps {
                Some(deps) if deps.has_definitions() => Step::Checked(Box::new(step), deps),
                _ => step,
            })
            .collect();
        Ok(program(frame, vec![], None, steps))
    }

    /// `RETURN [e]` of a function (its form already checked by [`return_misfit`]).
    fn function_return(
        &mut self,
        frame: &mut Frame,
        shape: &Shape,
        e: Option<&str>,
    ) -> Result<Step> {
        Ok(match (shape.set || !shape.out.is_empty(), &shape.columns, shape.value, e) {
            (false, Some(_), _, Some(e)) => match self.record_slots(frame, shape, e)? {
                Some(slots) => Step::ReturnSlots { slots, next: false },
                None => return Err(refused("RETURN of a row but as a record variable")),
            },
            (false, None, Some(ty), Some(e)) => {
                Step::ReturnValue(Some(self.expression(frame, e)?), ty)
            }
            _ => Step::ReturnValue(None, DataType::Unknown),
        })
    }

    /// The slots of a record variable `e` names, when the function returns rows of columns
    /// (`RETURN NEXT r`, `RETURN r`): as many fields as the rows have columns.
    fn record_slots(
        &mut self,
        frame: &mut Frame,
        shape: &Shape,
        e: &str,
    ) -> Result<Option<Vec<usize>>> {
        let Some(columns) = &shape.columns else { return Ok(None) };
        let name = e.trim();
        let name = if name.starts_with('"') && name.ends_with('"') && name.len() > 1 {
            name[1..name.len() - 1].to_string()
        } else {
            name.to_lowercase()
        };
        if !frame.is_record_var(&name) {
            return Err(refused(
                "RETURN NEXT or RETURN of a row but as a record variable (RETURN NEXT r, after SELECT … INTO r or FOR r IN …)",
            ));
        }
        let fields = frame.record_fields(&name)?;
        if fields.len() != columns.len() {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                "wrong record type supplied in RETURN NEXT",
            )
            .detail(format!(
                "Number of returned columns ({}) does not match expected column count ({}).",
                fields.len(),
                columns.len()
            )));
        }
        Ok(Some(fields))
    }

    fn steps(&mut self, frame: &mut Frame, statements: &[Stmt]) -> Result<Vec<Step>> {
        let mut out = Vec::with_capacity(statements.len());
        for (i, s) in statements.iter().enumerate() {
            if let Kind::Function { shape, .. } = &frame.kind {
                let value = shape.value.is_some() || shape.columns.is_some();
                if let Some(e) = return_misfit(s, shape.set, !shape.out.is_empty(), value) {
                    return Err(e);
                }
            }
            let mark = self.defer.then(|| frame.mark());
            let outer = std::mem::replace(&mut frame.deps, Dependencies::new());
            let bound = self.step(frame, s);
            let deps = std::mem::replace(&mut frame.deps, outer);
            frame.deps.extend(&deps);
            match bound {
                Ok(step) => {
                    let ddl = runs_ddl(&step);
                    out.push(if deps.has_definitions() {
                        Step::Checked(Box::new(step), deps)
                    } else {
                        step
                    });
                    // The statements after a schema statement are bound after it ran, with
                    // what it made or changed (PostgreSQL plans each when it first runs).
                    if ddl && i + 1 < statements.len() {
                        let stmts = statements[i + 1..].to_vec();
                        let late = Late { frame: frame.clone(), stmts, unbound: None };
                        out.push(Step::Late(Box::new(late)));
                        break;
                    }
                }
                Err(unbound) if mark.is_some() && bound_when_run(&unbound) => {
                    // PL/pgSQL plans a statement when it first runs: this one names what
                    // the catalog does not have yet (a table the function makes, a field of
                    // a record filled at run time). It and the rest of its block are bound
                    // when they run, with the names in scope here.
                    frame.restore(mark.expect("matched"));
                    frame.writes = true;
                    let stmts = statements[i..].to_vec();
                    let late = Late { frame: frame.clone(), stmts, unbound: Some(unbound) };
                    out.push(Step::Late(Box::new(late)));
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Binds one statement of a block.
    fn step(&mut self, frame: &mut Frame, s: &Stmt) -> Result<Step> {
        Ok(match s {
            Stmt::Assign(target, e) => {
                let (slot, ty, not_null) = match target.as_slice() {
                    [record, col] if frame.is_record(record) => {
                        let slot = frame.field(record, col)?;
                        (slot, frame.types[slot], false)
                    }
                    [name] => {
                        let Some((slot, constant)) = frame.declared(name) else {
                            if frame.var(name).is_some() {
                                return Err(refused(&format!("assigning to {name}")));
                            }
                            return Err(unknown_variable(name));
                        };
                        if constant {
                            return Err(constant_variable(name));
                        }
                        (slot, frame.types[slot], frame.not_null.contains(&slot))
                    }
                    _ => return Err(unknown_variable(target.join("."))),
                };
                let value = self.expression(frame, e)?;
                Step::Assign { slot, ty, value, not_null }
            }
            Stmt::If(arms, otherwise) => {
                let mut bound = Vec::with_capacity(arms.len());
                for (c, body) in arms {
                    let c = self.expression(frame, c)?;
                    bound.push((c, self.steps(frame, body)?));
                }
                Step::If(bound, self.steps(frame, otherwise)?)
            }
            Stmt::Raise(r) => {
                let mut params = Vec::new();
                for p in &r.params {
                    params.push(self.expression(frame, p)?);
                }
                let mut using = Vec::new();
                for (_, e) in &r.using {
                    using.push(self.expression(frame, e)?);
                }
                Step::Raise { raise: r.clone(), params, using }
            }
            Stmt::Assert(c, m) => {
                let c = self.expression(frame, c)?;
                let m = match m {
                    Some(m) => Some(self.expression(frame, m)?),
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
                Step::Perform(Box::new(self.planned(frame, |p| p.query(q, None))?))
            }
            Stmt::Sql(text) => self.sql_step(frame, text)?,
            Stmt::Return(e) => match &frame.kind {
                Kind::Trigger(_) => Step::Return(match e.as_deref().map(returned_record) {
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
                Kind::Function { shape, .. } => {
                    let shape = shape.clone();
                    self.function_return(frame, &shape, e.as_deref())?
                }
            },
            Stmt::ReturnNext(e) => {
                let shape = match &frame.kind {
                    Kind::Function { shape, .. } => shape.clone(),
                    Kind::Trigger(_) => {
                        return Err(return_misfit(s, false, false, false).expect("misfit"))
                    }
                };
                match e {
                    None => Step::ReturnSlots { slots: shape.out.clone(), next: true },
                    Some(e) => match self.record_slots(frame, &shape, e)? {
                        Some(slots) => Step::ReturnSlots { slots, next: true },
                        None => Step::ReturnNext(self.expression(frame, e)?),
                    },
                }
            }
            Stmt::ReturnExecute(ex) => {
                if matches!(frame.kind, Kind::Trigger(_)) {
                    return Err(return_misfit(s, false, false, false).expect("misfit"));
                }
                let (sql, using) = self.dynamic(frame, &ex.sql, &ex.using)?;
                Step::ReturnExecute { sql, using }
            }
            Stmt::ReturnQuery(q) => {
                let shape = match &frame.kind {
                    Kind::Function { shape, .. } => shape.clone(),
                    Kind::Trigger(_) => {
                        return Err(return_misfit(s, false, false, false).expect("misfit"))
                    }
                };
                let mut stmt = one_statement(q)?;
                frame.rewrite(&mut stmt)?;
                let ast::Statement::Query(q) = &stmt else {
                    return Err(refused("RETURN QUERY of anything but a query"));
                };
                let plan = self.planned(frame, |p| p.query(q, None))?;
                if plan.columns.len() != shape.types().len() {
                    return Err(SqlError::new(
                            code::DATATYPE_MISMATCH,
                            "structure of query does not match function result type",
                        )
                        .detail(format!(
                            "Number of returned columns ({}) does not match expected column count ({}).",
                            plan.columns.len(),
                            shape.types().len()
                        )));
                }
                Step::ReturnQuery(Box::new(plan))
            }
            Stmt::Block(b) if b.handlers.is_empty() => {
                Step::Block(self.steps(frame, &b.statements)?)
            }
            Stmt::Block(b) => {
                let body = self.steps(frame, &b.statements)?;
                let mut handlers = Vec::with_capacity(b.handlers.len());
                for h in &b.handlers {
                    handlers.push((h.clone(), self.steps(frame, &h.statements)?));
                }
                Step::Guarded { body, handlers }
            }
            Stmt::Loop(condition, body) => {
                let condition = match condition {
                    Some(c) => Some(self.expression(frame, c)?),
                    None => None,
                };
                Step::Loop { condition, body: self.steps(frame, body)? }
            }
            Stmt::ForRange(f) => {
                let low = self.expression(frame, &f.low)?;
                let high = self.expression(frame, &f.high)?;
                let step = match &f.step {
                    Some(s) => Some(self.expression(frame, s)?),
                    None => None,
                };
                // The loop variable: an integer of its own, seen inside the loop only.
                let slot = frame.declare(&f.var, DataType::Int4, false);
                let body = self.steps(frame, &f.body);
                frame.vars.pop();
                Step::ForRange { slot, low, high, step, reverse: f.reverse, body: body? }
            }
            Stmt::ForQuery(f) if f.execute.is_some() => {
                let using = f.execute.as_deref().unwrap_or_default();
                let (sql, using) = self.dynamic(frame, &f.query, using)?;
                let target = if frame.is_record_var(&f.var) {
                    let stmts = f.body.clone();
                    ForTarget::Record(
                        f.var.clone(),
                        Box::new(Late { frame: frame.clone(), stmts, unbound: None }),
                    )
                } else {
                    match frame.declared(&f.var) {
                        Some((slot, false)) => {
                            ForTarget::Slot(slot, frame.types[slot], self.steps(frame, &f.body)?)
                        }
                        Some((_, true)) => return Err(constant_variable(&f.var)),
                        None => return Err(unknown_variable(&f.var)),
                    }
                };
                frame.writes = true;
                Step::ForExecute { sql, using, target }
            }
            Stmt::ForQuery(f) => {
                let mut stmt = one_statement(&f.query)?;
                frame.rewrite(&mut stmt)?;
                let ast::Statement::Query(q) = &stmt else {
                    return Err(SqlError::syntax("FOR … IN takes a query"));
                };
                let plan = self.planned(frame, |p| p.query(q, None))?;
                let targets = if frame.is_record_var(&f.var) {
                    frame.shape_record(&f.var, &plan.columns)
                } else {
                    match frame.declared(&f.var) {
                            Some((slot, false)) if plan.columns.len() == 1 => {
                                vec![(slot, frame.types[slot])]
                            }
                            _ => {
                                return Err(SqlError::syntax(
                                    "loop variable of loop over rows must be a record variable or list of scalar variables",
                                ))
                            }
                        }
                };
                Step::ForQuery { plan: Box::new(plan), targets, body: self.steps(frame, &f.body)? }
            }
            Stmt::GetDiagnostics(names) => {
                let mut targets = Vec::with_capacity(names.len());
                for n in names {
                    let Some((slot, constant)) = frame.declared(n) else {
                        return Err(unknown_variable(n));
                    };
                    if constant {
                        return Err(constant_variable(n));
                    }
                    targets.push((slot, frame.types[slot]));
                }
                Step::GetDiagnostics(targets)
            }
            Stmt::Exit(exit, condition) => {
                let condition = match condition {
                    Some(c) => Some(self.expression(frame, c)?),
                    None => None,
                };
                Step::Exit { exit: *exit, condition }
            }
            Stmt::Execute(ex) => {
                let (sql, using) = self.dynamic(frame, &ex.sql, &ex.using)?;
                let mut into = Vec::with_capacity(ex.into.len());
                for t in &ex.into {
                    let parts: Vec<String> = t
                        .split('.')
                        .map(|p| {
                            let p = p.trim();
                            match p.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
                                Some(quoted) => quoted.to_string(),
                                None => p.to_lowercase(),
                            }
                        })
                        .collect();
                    let slot = match parts.as_slice() {
                        [record, col] if frame.is_record(record) => frame.field(record, col)?,
                        [n] if frame.is_record_var(n) => {
                            return Err(refused("EXECUTE … INTO a record variable"))
                        }
                        [n] => frame
                            .declared(n)
                            .map(|(slot, _)| slot)
                            .ok_or_else(|| unknown_variable(n))?,
                        _ => return Err(unknown_variable(t)),
                    };
                    into.push((slot, frame.types[slot]));
                }
                Step::Execute { sql, using, into, strict: ex.strict }
            }
        })
    }

    /// Dynamic SQL's text expression and its USING expressions, bound.
    fn dynamic(
        &mut self,
        frame: &mut Frame,
        sql: &str,
        using: &[String],
    ) -> Result<(Query, Vec<Query>)> {
        let sql = self.expression(frame, sql)?;
        let using = using.iter().map(|u| self.expression(frame, u)).collect::<Result<_>>()?;
        Ok((sql, using))
    }

    /// An SQL statement of a function: SELECT … INTO, INSERT, UPDATE or DELETE.
    fn sql_step(&mut self, frame: &mut Frame, text: &str) -> Result<Step> {
        // INSERT, UPDATE or DELETE … RETURNING … INTO targets: the write, and the targets of
        // its first row.
        if let Some((write, targets)) = returning_into(text)? {
            let mut slots = Vec::with_capacity(targets.len());
            for t in &targets {
                let parts: Vec<&str> = t.split('.').collect();
                let slot = match parts.as_slice() {
                    [record, col] if frame.is_record(record) => frame.field(record, col)?,
                    [n] => frame
                        .declared(n)
                        .map(|(slot, _)| slot)
                        .ok_or_else(|| unknown_variable(n))?,
                    _ => return Err(unknown_variable(t)),
                };
                slots.push((slot, frame.types[slot]));
            }
            let step = self.sql_step(frame, &write)?;
            return Ok(Step::WriteInto(Box::new(step), slots));
        }
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
                    return Err(no_destination());
                };
                // SELECT … INTO a record: its fields are the query's columns.
                if let [ast::Expr::Identifier(i)] = into.targets.as_slice() {
                    let n = crate::bind::ident(i);
                    if frame.is_record_var(&n) {
                        let plan = self.planned(frame, |p| p.query(q, None))?;
                        let targets = frame.shape_record(&n, &plan.columns);
                        return Ok(Step::SelectInto { plan: Box::new(plan), targets });
                    }
                }
                let mut targets = Vec::new();
                for t in &into.targets {
                    let slot = match t {
                        ast::Expr::Identifier(i) => {
                            let n = crate::bind::ident(i);
                            frame
                                .declared(&n)
                                .map(|(slot, _)| slot)
                                .ok_or_else(|| unknown_variable(n))?
                        }
                        ast::Expr::CompoundIdentifier(p) if p.len() == 2 => {
                            let record = crate::bind::ident(&p[0]);
                            if !frame.is_record(&record) {
                                return Err(unknown_variable(t));
                            }
                            frame.field(&record, &crate::bind::ident(&p[1]))?
                        }
                        _ => return Err(unknown_variable(t)),
                    };
                    targets.push((slot, frame.types[slot]));
                }
                let plan = self.planned(frame, |p| p.query(q, None))?;
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
                Ok(Step::Insert(Box::new(self.planned(frame, |p| plan_insert(p, ins))?)))
            }
            ast::Statement::Update(u) => {
                Ok(Step::Update(Box::new(self.planned(frame, |p| plan_update(p, u))?)))
            }
            ast::Statement::Delete(d) => {
                Ok(Step::Delete(Box::new(self.planned(frame, |p| plan_delete(p, d))?)))
            }
            ast::Statement::Merge(m) => Ok(Step::Merge(Box::new(
                self.planned(frame, |p| crate::bind::merge::plan_merge(p, m))?,
            ))),
            other if schema_statement(other) => Ok(Step::Utility(text.to_string())),
            other => Err(refused(&format!(
                "the statement {}",
                other.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" ")
            ))),
        }
    }
}

impl Writer<'_> {
    /// Fails unless a function may run schema statement `stmt` now: not in a trigger (the
    /// statement that fired it is still using its tables), nor in a call with other reads
    /// around it (see [`Writer::call_alone`]), whose plans the change could outdate.
    fn may_change_schema(&self, stmt: &ast::Statement) -> Result<()> {
        let what = crate::session::first_words(&stmt.to_string()).to_uppercase();
        if self.triggers.depth() > 0 {
            return Err(SqlError::unsupported(format!("{what} in a trigger function")).hint(
                "The statement that fired the trigger is still using its tables. Run the change outside the trigger.",
            ));
        }
        if self.ddl_guard > 0 {
            return Err(SqlError::unsupported(format!(
                "{what} in a function called with other reads in the same statement"
            ))
            .hint("Call a function that changes the schema alone: SELECT f(…), SELECT * FROM f(…), PERFORM f(…) or CALL."));
        }
        Ok(())
    }
}

/// Whether `stmt` is a schema statement a function may run ([`Writer::ddl`]).
fn schema_statement(stmt: &ast::Statement) -> bool {
    use ast::Statement as S;
    matches!(
        stmt,
        S::CreateTable(_)
            | S::CreateView(_)
            | S::Drop { .. }
            | S::DropDomain(_)
            | S::CreateType { .. }
            | S::AlterType(_)
            | S::AlterSchema(_)
            | S::CreateSequence { .. }
            | S::CreateIndex(_)
            | S::DropFunction(_)
            | S::DropProcedure { .. }
            | S::AlterFunction(_)
            | S::DropTrigger(_)
            | S::AlterIndex { .. }
            | S::CreateSchema { .. }
            | S::CreateExtension(_)
            | S::DropExtension(_)
            | S::Grant(_)
            | S::Revoke(_)
            | S::Comment { .. }
            | S::AlterTable(_)
            | S::Truncate(_)
    )
}

/// Who runs a program's statements.
pub(crate) trait Host {
    /// Every row of `plan`, with the frame as its parameters.
    fn rows(
        &mut self,
        plan: &SelectPlan,
        frame: &[Value],
        env: &dyn Env,
    ) -> Result<Vec<Vec<Value>>>;
    /// Runs an INSERT, UPDATE or DELETE step: how many rows it wrote, and the rows it
    /// returned (RETURNING).
    fn write(
        &mut self,
        step: &Step,
        frame: &[Value],
        env: &dyn Env,
    ) -> Result<(u64, Vec<Vec<Value>>)>;
    /// Fails when the statement was canceled.
    /// Dynamic SQL: `sql` parsed and bound now, `params` its `$1`, `$2`, …, run; its
    /// columns, rows and row count.
    fn execute(
        &mut self,
        sql: &str,
        params: &[Value],
        types: &[DataType],
        env: &dyn Env,
    ) -> Result<Executed>;

    /// Binds statements of a function when they run ([`Late`]): `bind` with a binder of
    /// the host's transaction. A host that cannot bind answers `unbound`.
    fn bind(
        &mut self,
        env: &dyn Env,
        unbound: Option<&SqlError>,
        bind: &mut dyn FnMut(&mut Binder) -> Result<Vec<Step>>,
    ) -> Result<Vec<Step>>;

    /// Whether a function ran a schema statement in this statement (then bound plans are
    /// checked before they run).
    fn schema_changed(&self) -> bool;
    /// Whether `deps`' definitions are still the ones the transaction sees.
    fn definitions_valid(&mut self, deps: &Dependencies, env: &dyn Env) -> Result<bool>;

    fn interrupted(&self) -> Result<()>;
    /// The most rows a statement may hold (what a set-returning function may return).
    fn rows_max(&self) -> usize;
    /// Marks where a block with handlers starts (`None`: nothing to undo).
    fn mark(&mut self) -> Option<Mark>;
    /// Undoes what was written since `mark` (a handler caught an error).
    fn undo(&mut self, mark: Option<Mark>) -> Result<()>;
    /// Forgets `mark` (its block ended).
    fn forget(&mut self, mark: Option<Mark>);
}

/// Where a block with handlers started: the engine's savepoint and how many row locks were
/// held.
pub(crate) type Mark = (kiln_engine::Savepoint, usize);

/// What dynamic SQL gave: its columns (none for a write without RETURNING), rows and row
/// count.
pub(crate) type Executed = (Vec<(String, DataType)>, Vec<Vec<Value>>, u64);

/// Runs a one-column query with the frame as its parameters.
fn eval(host: &mut dyn Host, q: &Query, frame: &[Value], env: &dyn Env) -> Result<Value> {
    let rows = host.rows(&q.plan, frame, env)?;
    Ok(rows.into_iter().next().and_then(|r| r.into_iter().next()).unwrap_or(Value::Null))
}

fn truth(host: &mut dyn Host, q: &Query, frame: &[Value], env: &dyn Env) -> Result<bool> {
    Ok(matches!(eval(host, q, frame, env)?, Value::Bool(true)))
}

/// The error of a `RETURN` form that a function of this kind cannot have, as PL/pgSQL finds
/// it when it reads the function (`set`: it returns a set; `out`: it has OUT arguments;
/// `value`: it returns a value or a row, not void); statements nested in `s` are checked
/// too.
pub(crate) fn return_misfit(s: &Stmt, set: bool, out: bool, value: bool) -> Option<SqlError> {
    let mismatch = |m: &str| Some(SqlError::new(code::DATATYPE_MISMATCH, m.to_string()));
    let all = |v: &[Stmt]| v.iter().find_map(|s| return_misfit(s, set, out, value));
    match s {
        Stmt::Return(Some(_)) if set => {
            let e = mismatch("RETURN cannot have a parameter in function returning set");
            e.map(|e| e.hint("Use RETURN NEXT or RETURN QUERY."))
        }
        Stmt::Return(Some(_)) if out => {
            mismatch("RETURN cannot have a parameter in function with OUT parameters")
        }
        Stmt::Return(Some(_)) if !value => {
            mismatch("RETURN cannot have a parameter in function returning void")
        }
        Stmt::Return(None) if value && !set && !out => Some(
            SqlError::syntax("missing expression at or near \";\"")
                .hint("A function that returns a value returns it with RETURN expression."),
        ),
        Stmt::ReturnNext(_) if !set => mismatch("cannot use RETURN NEXT in a non-SETOF function"),
        Stmt::ReturnQuery(_) | Stmt::ReturnExecute(_) if !set => {
            mismatch("cannot use RETURN QUERY in a non-SETOF function")
        }
        Stmt::ReturnNext(Some(_)) if out => {
            mismatch("RETURN NEXT cannot have a parameter in function with OUT parameters")
        }
        Stmt::ReturnNext(None) if !out => {
            Some(SqlError::syntax("RETURN NEXT must have a parameter"))
        }
        Stmt::If(arms, otherwise) => {
            arms.iter().find_map(|(_, b)| all(b)).or_else(|| all(otherwise))
        }
        Stmt::Block(b) => {
            all(&b.statements).or_else(|| b.handlers.iter().find_map(|h| all(&h.statements)))
        }
        Stmt::Loop(_, b) => all(b),
        Stmt::ForRange(f) => all(&f.body),
        Stmt::ForQuery(f) => all(&f.body),
        _ => None,
    }
}

/// A function's result as `RETURNS` names it, without SETOF: `integer`, `record`.
fn result_name(shape: &Shape) -> String {
    match (&shape.columns, shape.value) {
        (Some(_), _) => "record".into(),
        (None, Some(t)) => t.sql_name(),
        (None, None) => "void".into(),
    }
}

/// A bound program of `frame`'s slots.
fn program(
    frame: Frame,
    declared: Vec<(usize, DataType, Option<Query>, bool)>,
    when: Option<Query>,
    body: Vec<Step>,
) -> (Program, Dependencies) {
    fn writes(steps: &[Step]) -> bool {
        steps.iter().any(|s| match s {
            Step::Insert(_)
            | Step::Update(_)
            | Step::Delete(_)
            | Step::Merge(_)
            | Step::WriteInto(..)
            | Step::ReturnWrite(_)
            | Step::Execute { .. }
            | Step::Late(_)
            | Step::ForExecute { .. }
            | Step::ReturnExecute { .. }
            | Step::Utility(_) => true,
            Step::Checked(s, _) => writes(std::slice::from_ref(s)),
            Step::If(arms, otherwise) => arms.iter().any(|(_, b)| writes(b)) || writes(otherwise),
            Step::Guarded { body, handlers } => {
                writes(body) || handlers.iter().any(|(_, b)| writes(b))
            }
            Step::Block(b)
            | Step::Loop { body: b, .. }
            | Step::ForRange { body: b, .. }
            | Step::ForQuery { body: b, .. } => writes(b),
            _ => false,
        })
    }
    let width = frame.width();
    let (inputs, shape) = match &frame.kind {
        Kind::Function { inputs, shape, .. } => (inputs.clone(), shape.clone()),
        Kind::Trigger(_) => (vec![], Shape::default()),
    };
    let program = Program {
        inputs,
        shape,
        width,
        slots: frame.types.len(),
        found: frame.found,
        row_count: frame.found + 1,
        result: frame.found + 2,
        declared,
        when,
        writes: frame.writes || writes(&body),
        body,
    };
    (program, frame.deps)
}

impl Program {
    /// A frame of NULLs but for `first`, its leading slots (a trigger's rows and
    /// variables, a function's arguments).
    pub(crate) fn frame(&self, first: Vec<Value>) -> Vec<Value> {
        let mut frame = first;
        frame.resize(self.slots, Value::Null);
        frame
    }

    /// Whether the trigger's WHEN condition holds for `frame`.
    pub(crate) fn when(&self, host: &mut dyn Host, frame: &[Value], env: &dyn Env) -> Result<bool> {
        match &self.when {
            Some(w) => truth(host, w, frame, env),
            None => Ok(true),
        }
    }

    /// Runs the program on `frame`: its variables' initial values, then its body.
    pub(crate) fn run(
        &self,
        host: &mut dyn Host,
        frame: &mut Vec<Value>,
        env: &dyn Env,
    ) -> Result<Flow> {
        self.run_into(host, frame, env, &mut Vec::new())
    }

    /// Runs the program on `frame`, gathering a set-returning function's rows in `set`.
    fn run_into(
        &self,
        host: &mut dyn Host,
        frame: &mut Vec<Value>,
        env: &dyn Env,
        set: &mut Vec<Value>,
    ) -> Result<Flow> {
        for (slot, ty, default, not_null) in &self.declared {
            if let Some(d) = default {
                let v = eval(host, d, frame, env)?;
                frame[*slot] = assign(v, *ty, env.style())?;
            }
            if *not_null && frame[*slot].is_null() {
                return Err(null_into_not_null());
            }
        }
        run_steps(host, self, &self.body, frame, env, None, set)
    }

    /// Runs a function's program on the values of the arguments a call gives: what it
    /// returned, as its [`Shape`] makes it a value (the empty string for a function
    /// returning void). `name` is the function as messages show it.
    pub(crate) fn call(
        &self,
        host: &mut dyn Host,
        args: Vec<Value>,
        name: &str,
        env: &dyn Env,
    ) -> Result<Value> {
        let mut frame = vec![Value::Null; self.slots];
        for (slot, v) in self.inputs.iter().zip(args) {
            frame[*slot] = v;
        }
        let mut set = Vec::new();
        let flow = self.run_into(host, &mut frame, env, &mut set)?;
        let shape = &self.shape;
        if shape.set {
            return Ok(Value::Array(set));
        }
        if !shape.out.is_empty() {
            // Its OUT arguments' values, as they are when it returns or ends.
            let row = shape.out.iter().map(|s| std::mem::replace(&mut frame[*s], Value::Null));
            return Ok(shape.row_value(row.collect()));
        }
        let returns_value = shape.value.is_some() || shape.columns.is_some();
        match flow {
            Flow::Return(_) if returns_value => {
                Ok(std::mem::replace(&mut frame[self.result], Value::Null))
            }
            Flow::Next | Flow::Exit | Flow::Continue if returns_value => {
                Err(SqlError::new("2F005", "control reached end of function without RETURN")
                    .context(format!("PL/pgSQL function {}", name.replace(", ", ","))))
            }
            // `void` is a value, written as the empty string.
            Flow::Return(_) | Flow::Next | Flow::Exit | Flow::Continue => {
                Ok(Value::Text(String::new()))
            }
        }
    }
}

/// Runs a program's steps.
/// `set` gathers the rows of a set-returning function (as `Shape` makes them values).
fn run_steps(
    host: &mut dyn Host,
    p: &Program,
    steps: &[Step],
    frame: &mut Vec<Value>,
    env: &dyn Env,
    caught: Option<&SqlError>,
    set: &mut Vec<Value>,
) -> Result<Flow> {
    for s in steps {
        host.interrupted()?;
        match s {
            Step::Assign { slot, ty, value, not_null } => {
                let v = eval(host, value, frame, env)?;
                if *not_null && v.is_null() {
                    return Err(null_into_not_null());
                }
                frame[*slot] = assign(v, *ty, env.style())?;
            }
            Step::If(arms, otherwise) => {
                let mut taken = otherwise;
                for (c, body) in arms {
                    if truth(host, c, frame, env)? {
                        taken = body;
                        break;
                    }
                }
                match run_steps(host, p, taken, frame, env, caught, set)? {
                    Flow::Next => {}
                    other => return Ok(other),
                }
            }
            Step::Block(body) => match run_steps(host, p, body, frame, env, caught, set)? {
                Flow::Next => {}
                other => return Ok(other),
            },
            Step::Raise { raise, params, using } => {
                let mut texts = Vec::with_capacity(params.len());
                for q in params {
                    texts.push(eval(host, q, frame, env)?.to_text_in(q.ty, env.style()));
                }
                let mut options = Vec::with_capacity(using.len());
                for q in using {
                    options.push(eval(host, q, frame, env)?.to_text_in(q.ty, env.style()));
                }
                let Some(e) = do_block::raised(raise, &texts, &options)? else {
                    // A bare RAISE raises the error its handler caught again.
                    return Err(match caught {
                        Some(e) => e.clone(),
                        None => SqlError::new(
                            "0Z002",
                            "RAISE without parameters cannot be used outside an exception handler",
                        ),
                    });
                };
                if raise.level == Level::Exception {
                    return Err(e);
                }
                env.notice(Notice { level: raise.level, fields: e });
            }
            Step::Assert(c, m) => {
                if !truth(host, c, frame, env)? {
                    let message = match m {
                        Some(m) => eval(host, m, frame, env)?
                            .to_text_in(m.ty, env.style())
                            .unwrap_or_else(|| "<NULL>".into()),
                        None => "assertion failed".into(),
                    };
                    return Err(SqlError::new("P0004", message));
                }
            }
            Step::Perform(plan) => {
                let n = host.rows(plan, frame, env)?.len();
                frame[p.found] = Value::Bool(n > 0);
                frame[p.row_count] = Value::Int(n as i64);
            }
            Step::SelectInto { plan, targets } => {
                let rows = host.rows(plan, frame, env)?;
                frame[p.found] = Value::Bool(!rows.is_empty());
                // The one row taken, as in PL/pgSQL.
                frame[p.row_count] = Value::Int(rows.len().min(1) as i64);
                let row = rows.into_iter().next();
                for (k, (slot, ty)) in targets.iter().enumerate() {
                    let v = row.as_ref().map_or(Value::Null, |r| r[k].clone());
                    frame[*slot] = assign(v, *ty, env.style())?;
                }
            }
            Step::Insert(_) | Step::Update(_) | Step::Delete(_) | Step::Merge(_) => {
                let (n, _) = host.write(s, frame, env)?;
                frame[p.found] = Value::Bool(n > 0);
                frame[p.row_count] = Value::Int(n as i64);
            }
            Step::Guarded { body, handlers } => {
                let mark = host.mark();
                match run_steps(host, p, body, frame, env, caught, set) {
                    Ok(flow) => {
                        host.forget(mark);
                        if !matches!(flow, Flow::Next) {
                            return Ok(flow);
                        }
                    }
                    Err(e) => {
                        let Some((_, statements)) =
                            handlers.iter().find(|(h, _)| h.catches(e.code))
                        else {
                            host.forget(mark);
                            return Err(e);
                        };
                        // The block's writes are undone; the handler runs with its error.
                        host.undo(mark)?;
                        frame[p.found + 3] = Value::Text(e.code.to_string());
                        frame[p.found + 4] = Value::Text(e.message.clone());
                        match run_steps(host, p, statements, frame, env, Some(&e), set)? {
                            Flow::Next => {}
                            other => return Ok(other),
                        }
                    }
                }
            }
            Step::ForQuery { plan, targets, body } => {
                let rows = host.rows(plan, frame, env)?;
                let any = !rows.is_empty();
                if let Flow::Return(r) =
                    for_rows(host, p, targets, body, rows, frame, env, caught, set)?
                {
                    return Ok(Flow::Return(r));
                }
                frame[p.found] = Value::Bool(any);
            }
            Step::WriteInto(write, targets) => {
                let (n, rows) = host.write(write, frame, env)?;
                let row = rows.into_iter().next();
                frame[p.found] = Value::Bool(n > 0);
                frame[p.row_count] = Value::Int(n as i64);
                for (k, (slot, ty)) in targets.iter().enumerate() {
                    let v = row.as_ref().and_then(|r| r.get(k).cloned()).unwrap_or(Value::Null);
                    frame[*slot] = assign(v, *ty, env.style())?;
                }
            }
            Step::Execute { sql, using, into, strict } => {
                let (text, params, types) = dynamic_text(host, sql, using, frame, env)?;
                // A position in the dynamic text is none in the calling statement's.
                let (columns, rows, n) =
                    host.execute(&text, &params, &types, env).map_err(|mut e| {
                        e.position = None;
                        e.location = None;
                        e
                    })?;
                // EXECUTE sets the row count, not FOUND, as in PL/pgSQL.
                frame[p.row_count] = Value::Int(n as i64);
                if !into.is_empty() {
                    if columns.is_empty() {
                        return Err(SqlError::syntax(
                            "INTO used with a command that cannot return data",
                        ));
                    }
                    if *strict {
                        strict_rows(rows.len(), false)?;
                    }
                    if columns.len() != into.len() {
                        return Err(SqlError::syntax(format!(
                            "the query gives {} columns into {} variables",
                            columns.len(),
                            into.len()
                        )));
                    }
                    let row = rows.into_iter().next();
                    for (k, (slot, ty)) in into.iter().enumerate() {
                        let v = row.as_ref().and_then(|r| r.get(k).cloned()).unwrap_or(Value::Null);
                        frame[*slot] = assign(v, *ty, env.style())?;
                    }
                }
            }
            Step::Late(late) => {
                let base = frame.len();
                let steps = bind_late(host, late, frame, env, None)?.0;
                let flow = run_steps(host, p, &steps, frame, env, caught, set);
                frame.truncate(base);
                match flow? {
                    Flow::Next => {}
                    other => return Ok(other),
                }
            }
            Step::Utility(text) => {
                host.execute(text, &[], &[], env).map_err(unpositioned)?;
            }
            Step::Checked(step, deps) => {
                if host.schema_changed() && !host.definitions_valid(deps, env)? {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "a statement of the function reads a table, view, sequence, type or function the function changed since it was bound",
                    )
                    .hint("Run the statement with EXECUTE, or make the change before the function's statements that use the object."));
                }
                match run_steps(host, p, std::slice::from_ref(step), frame, env, caught, set)? {
                    Flow::Next => {}
                    other => return Ok(other),
                }
            }
            Step::ReturnExecute { sql, using } => {
                let (columns, rows) = dynamic_query(host, sql, using, frame, env)?;
                let expected = p.shape.types().len();
                if columns.len() != expected {
                    return Err(SqlError::new(
                        code::DATATYPE_MISMATCH,
                        "structure of query does not match function result type",
                    )
                    .detail(format!(
                        "Number of returned columns ({}) does not match expected column count ({expected}).",
                        columns.len(),
                    )));
                }
                frame[p.found] = Value::Bool(!rows.is_empty());
                frame[p.row_count] = Value::Int(rows.len() as i64);
                for row in rows {
                    let row = p.shape.converted(row, env)?;
                    gather(host, set, p.shape.row_value(row))?;
                }
            }
            Step::ForExecute { sql, using, target } => {
                let (columns, rows) = dynamic_query(host, sql, using, frame, env)?;
                let any = !rows.is_empty();
                let base = frame.len();
                let flow = match target {
                    // A variable takes the first column (the others are dropped, as in
                    // PL/pgSQL).
                    ForTarget::Slot(slot, ty, body) => {
                        let targets = [(*slot, *ty)];
                        for_rows(host, p, &targets, body, rows, frame, env, caught, set)
                    }
                    ForTarget::Record(name, late) if any => {
                        let (body, targets) =
                            bind_late(host, late, frame, env, Some((name, &columns)))?;
                        for_rows(host, p, &targets, &body, rows, frame, env, caught, set)
                    }
                    ForTarget::Record(..) => Ok(Flow::Next),
                };
                frame.truncate(base);
                if let Flow::Return(r) = flow? {
                    return Ok(Flow::Return(r));
                }
                frame[p.found] = Value::Bool(any);
            }
            Step::ReturnNext(q) => {
                let v = eval(host, q, frame, env)?;
                let ty = p.shape.value.unwrap_or(DataType::Unknown);
                gather(host, set, assign(v, ty, env.style())?)?;
            }
            Step::ReturnSlots { slots, next } => {
                let mut row = Vec::with_capacity(slots.len());
                for (slot, ty) in slots.iter().zip(p.shape.types()) {
                    row.push(assign(frame[*slot].clone(), ty, env.style())?);
                }
                if !*next {
                    frame[p.result] = p.shape.row_value(row);
                    return Ok(Flow::Return(Returned::Value));
                }
                gather(host, set, p.shape.row_value(row))?;
            }
            Step::ReturnQuery(plan) => {
                let rows = host.rows(plan, frame, env)?;
                frame[p.found] = Value::Bool(!rows.is_empty());
                frame[p.row_count] = Value::Int(rows.len() as i64);
                for row in rows {
                    let row = p.shape.converted(row, env)?;
                    gather(host, set, p.shape.row_value(row))?;
                }
            }
            Step::ReturnRow(plan) => {
                let row = host.rows(plan, frame, env)?.into_iter().next();
                frame[p.result] = match row {
                    Some(row) => p.shape.row_value(p.shape.converted(row, env)?),
                    None => Value::Null,
                };
                return Ok(Flow::Return(Returned::Value));
            }
            Step::ReturnWrite(write) => {
                let (_, rows) = host.write(write, frame, env)?;
                if p.shape.set {
                    for row in rows {
                        let row = p.shape.converted(row, env)?;
                        gather(host, set, p.shape.row_value(row))?;
                    }
                } else {
                    frame[p.result] = match rows.into_iter().next() {
                        Some(row) => p.shape.row_value(p.shape.converted(row, env)?),
                        None => Value::Null,
                    };
                }
                return Ok(Flow::Return(Returned::Value));
            }
            Step::Return(r) => return Ok(Flow::Return(*r)),
            Step::ReturnValue(q, ty) => {
                if let Some(q) = q {
                    let v = eval(host, q, frame, env)?;
                    frame[p.result] = assign(v, *ty, env.style())?;
                }
                return Ok(Flow::Return(Returned::Value));
            }
            Step::GetDiagnostics(targets) => {
                for (slot, ty) in targets {
                    frame[*slot] = assign(frame[p.row_count].clone(), *ty, env.style())?;
                }
            }
            Step::Exit { exit, condition } => {
                let taken = match condition {
                    Some(c) => truth(host, c, frame, env)?,
                    None => true,
                };
                if taken {
                    return Ok(if *exit { Flow::Exit } else { Flow::Continue });
                }
            }
            Step::Loop { condition, body } => loop {
                host.interrupted()?;
                if let Some(c) = condition {
                    if !truth(host, c, frame, env)? {
                        break;
                    }
                }
                match run_steps(host, p, body, frame, env, caught, set)? {
                    Flow::Return(r) => return Ok(Flow::Return(r)),
                    Flow::Exit => break,
                    Flow::Next | Flow::Continue => {}
                }
            },
            Step::ForRange { slot, low, high, step, reverse, body } => {
                let bound = |host: &mut dyn Host, q: &Query, what: &str| -> Result<i64> {
                    for_bound(eval(host, q, frame, env)?, what, env.style())
                };
                let (low, high) =
                    (bound(host, low, "lower bound")?, bound(host, high, "upper bound")?);
                let by = for_step(match step {
                    Some(q) => bound(host, q, "BY value")?,
                    None => 1,
                })?;
                // REVERSE counts from the first bound down to the second.
                let mut i = low;
                while if *reverse { i >= high } else { i <= high } {
                    host.interrupted()?;
                    frame[*slot] = Value::Int(i);
                    match run_steps(host, p, body, frame, env, caught, set)? {
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

/// A query's columns and rows.
type Rows = (Vec<(String, DataType)>, Vec<Vec<Value>>);

/// The slots (and types) a row's values are assigned to.
type Targets = Vec<(usize, DataType)>;

/// Dynamic SQL's text (`sql`'s value; 22004 when NULL) and its parameters' values and
/// types (`using`'s).
fn dynamic_text(
    host: &mut dyn Host,
    sql: &Query,
    using: &[Query],
    frame: &[Value],
    env: &dyn Env,
) -> Result<(String, Vec<Value>, Vec<DataType>)> {
    let Some(text) = eval(host, sql, frame, env)?.to_text_in(sql.ty, env.style()) else {
        return Err(null_execute());
    };
    let mut params = Vec::with_capacity(using.len());
    let mut types = Vec::with_capacity(using.len());
    for u in using {
        params.push(eval(host, u, frame, env)?);
        types.push(if u.ty == DataType::Unknown { DataType::Text } else { u.ty });
    }
    Ok((text, params, types))
}

/// Runs the query whose text is `sql`'s value, `using` its parameters' values: its columns
/// and rows. Only a query is run (PostgreSQL opens a cursor on it).
fn dynamic_query(
    host: &mut dyn Host,
    sql: &Query,
    using: &[Query],
    frame: &[Value],
    env: &dyn Env,
) -> Result<Rows> {
    let (text, params, types) = dynamic_text(host, sql, using, frame, env)?;
    if !matches!(one_statement(&text).map_err(unpositioned)?, ast::Statement::Query(_)) {
        let word = text.split_whitespace().next().unwrap_or_default().to_uppercase();
        return Err(SqlError::new("42P11", format!("cannot open {word} query as cursor")));
    }
    let (columns, rows, _) = host.execute(&text, &params, &types, env).map_err(unpositioned)?;
    Ok((columns, rows))
}

/// A dynamic statement's error, without a position (one in its text is none in the
/// calling statement's).
fn unpositioned(mut e: SqlError) -> SqlError {
    e.position = None;
    e.location = None;
    e
}

/// Binds a [`Late`]'s statements in the frame they stand in, its new slots past every slot
/// in use (`frame` grows to hold them; the caller lets them go). With `record`, the record
/// variable of that name takes those columns first: its fields' slots are returned too.
#[recursive::recursive]
fn bind_late(
    host: &mut dyn Host,
    late: &Late,
    frame: &mut Vec<Value>,
    env: &dyn Env,
    record: Option<(&str, &[(String, DataType)])>,
) -> Result<(Vec<Step>, Targets)> {
    let mut f = late.frame.clone();
    if f.types.len() < frame.len() {
        f.types.resize(frame.len(), DataType::Unknown);
    }
    let targets = match record {
        Some((name, columns)) => f.shape_record(name, columns),
        None => vec![],
    };
    let steps = host
        .bind(env, late.unbound.as_ref(), &mut |b| b.steps(&mut f, &late.stmts))
        .map_err(unpositioned)?;
    frame.resize(f.types.len().max(frame.len()), Value::Null);
    Ok((steps, targets))
}

/// Runs a loop's body for each row, the row's values assigned to `targets` first; what
/// ended it (`Flow::Next` when the rows did, or EXIT).
#[allow(clippy::too_many_arguments)]
fn for_rows(
    host: &mut dyn Host,
    p: &Program,
    targets: &[(usize, DataType)],
    body: &[Step],
    rows: Vec<Vec<Value>>,
    frame: &mut Vec<Value>,
    env: &dyn Env,
    caught: Option<&SqlError>,
    set: &mut Vec<Value>,
) -> Result<Flow> {
    for row in rows {
        host.interrupted()?;
        for ((slot, ty), v) in targets.iter().zip(row) {
            frame[*slot] = assign(v, *ty, env.style())?;
        }
        match run_steps(host, p, body, frame, env, caught, set)? {
            Flow::Return(r) => return Ok(Flow::Return(r)),
            Flow::Exit => break,
            Flow::Next | Flow::Continue => {}
        }
    }
    Ok(Flow::Next)
}

/// Adds a row to a set-returning function's set, within the statement's row limit.
fn gather(host: &mut dyn Host, set: &mut Vec<Value>, row: Value) -> Result<()> {
    if set.len() >= host.rows_max() {
        return Err(SqlError::new(
            code::OUT_OF_MEMORY,
            format!("a set-returning function returned more than {} rows", host.rows_max()),
        )
        .hint("Raise the server's --rows-max to hold more rows in one statement."));
    }
    if set.len() % 4096 == 4095 {
        host.interrupted()?;
    }
    set.push(row);
    Ok(())
}

impl Host for Writer<'_> {
    fn rows(
        &mut self,
        plan: &SelectPlan,
        frame: &[Value],
        env: &dyn Env,
    ) -> Result<Vec<Vec<Value>>> {
        let limits = self.limits.clone();
        let ctx = Ctx::new(frame, env);
        // `PERFORM f(…)` of a function that writes.
        if crate::exec::routines::writing_call(plan) {
            return self.call_alone(plan, &ctx);
        }
        let plan = InitPlans::with(&mut self.ts.txn, &ctx, &limits, |i| i.select(plan.clone()))?;
        let cell = RefCell::new(&mut self.ts.txn);
        let exec = Exec::new(&cell, &limits);
        let ctx = Ctx { runner: Some(&exec), ..ctx };
        execute_select(&plan, &cell, &ctx, &limits)
    }

    fn write(
        &mut self,
        step: &Step,
        frame: &[Value],
        env: &dyn Env,
    ) -> Result<(u64, Vec<Vec<Value>>)> {
        self.nested(step, frame, env)
    }

    fn execute(
        &mut self,
        sql: &str,
        params: &[Value],
        types: &[DataType],
        env: &dyn Env,
    ) -> Result<Executed> {
        let stmt = one_statement(sql)?;
        let database = env.database();
        let mut planner = Planner::new(
            &mut self.ts.txn,
            &self.db.catalog,
            &database,
            types.to_vec(),
            &NoSystemTables,
            env,
        );
        let step = match &stmt {
            ast::Statement::Query(q) => {
                let plan = planner.query(q, None)?;
                let rows = Host::rows(self, &plan, params, env)?;
                let n = rows.len() as u64;
                return Ok((plan.columns, rows, n));
            }
            ast::Statement::Insert(ins) => Step::Insert(Box::new(plan_insert(&mut planner, ins)?)),
            ast::Statement::Update(u) => Step::Update(Box::new(plan_update(&mut planner, u)?)),
            ast::Statement::Delete(d) => Step::Delete(Box::new(plan_delete(&mut planner, d)?)),
            ast::Statement::Merge(m) => {
                Step::Merge(Box::new(crate::bind::merge::plan_merge(&mut planner, m)?))
            }
            other => {
                if schema_statement(other) {
                    self.may_change_schema(other)?;
                }
                let out = self.ddl(other, &database, &NoSystemTables, env)?;
                let Some(out) = out else {
                    return Err(refused(&format!(
                        "the statement {}",
                        crate::session::first_words(&other.to_string())
                    )));
                };
                // What the function runs after this is checked against the new schema.
                self.routine_ddl = true;
                self.report_cascade();
                let _ = out;
                return Ok((vec![], vec![], 0));
            }
        };
        let columns = step.returning_columns().map(<[_]>::to_vec).unwrap_or_default();
        let (n, rows) = self.nested(&step, params, env)?;
        Ok((columns, rows, n))
    }

    fn bind(
        &mut self,
        env: &dyn Env,
        _unbound: Option<&SqlError>,
        bind: &mut dyn FnMut(&mut Binder) -> Result<Vec<Step>>,
    ) -> Result<Vec<Step>> {
        let database = env.database();
        let mut binder = Binder {
            txn: &mut self.ts.txn,
            catalog: &self.db.catalog,
            database: &database,
            env,
            routines: vec![],
            sql_args: None,
            bound: Default::default(),
            defer: false,
        };
        bind(&mut binder)
    }

    fn schema_changed(&self) -> bool {
        self.routine_ddl
    }

    fn definitions_valid(&mut self, deps: &Dependencies, env: &dyn Env) -> Result<bool> {
        deps.definitions_valid(&mut self.ts.txn, &self.db.catalog, &env.database())
    }

    fn interrupted(&self) -> Result<()> {
        Writer::interrupted(self)
    }

    fn rows_max(&self) -> usize {
        self.limits.rows_max
    }

    fn mark(&mut self) -> Option<Mark> {
        Some((self.ts.txn.savepoint(), self.ts.locks.len()))
    }

    fn undo(&mut self, mark: Option<Mark>) -> Result<()> {
        if let Some((sp, locks)) = mark {
            self.ts.txn.rollback_to(sp)?;
            // As in PostgreSQL, the row locks taken in the block go with it.
            self.ts.locks.release_since(locks);
            self.ts.txn.release(sp);
        }
        Ok(())
    }

    fn forget(&mut self, mark: Option<Mark>) {
        if let Some((sp, _)) = mark {
            self.ts.txn.release(sp);
        }
    }
}

/// A query's executor as a host: a function called while a statement reads runs its reads
/// in the statement's transaction; a write there is refused.
pub(crate) struct QueryHost<'a, 't> {
    pub(crate) txn: &'a TxnCell<'t>,
    pub(crate) limits: &'a ExecLimits,
    /// The function, for the message refusing a write.
    pub(crate) name: &'a str,
}

impl Host for QueryHost<'_, '_> {
    fn rows(
        &mut self,
        plan: &SelectPlan,
        frame: &[Value],
        env: &dyn Env,
    ) -> Result<Vec<Vec<Value>>> {
        let ctx = Ctx::new(frame, env);
        let plan = {
            let mut txn = self.txn.borrow_mut();
            InitPlans::with(&mut txn, &ctx, self.limits, |i| i.select(plan.clone()))?
        };
        let exec = Exec::new(self.txn, self.limits);
        let ctx = Ctx { runner: Some(&exec), ..ctx };
        execute_select(&plan, self.txn, &ctx, self.limits)
    }

    fn write(
        &mut self,
        _step: &Step,
        _frame: &[Value],
        _env: &dyn Env,
    ) -> Result<(u64, Vec<Vec<Value>>)> {
        Err(writes_in_query(self.name))
    }

    fn execute(
        &mut self,
        _sql: &str,
        _params: &[Value],
        _types: &[DataType],
        _env: &dyn Env,
    ) -> Result<Executed> {
        Err(SqlError::unsupported(format!(
            "EXECUTE or a schema statement in function {} called inside a query",
            self.name
        ))
        .hint("Kiln runs a function's dynamic SQL and schema statements when the function is called alone (SELECT f(…) without FROM, SELECT * FROM f(…), PERFORM f(…), CALL) or by a trigger."))
    }

    // A function called inside a query writes nothing, so the catalog is as it was when
    // the statement was bound: what failed to bind then fails now.
    fn bind(
        &mut self,
        _env: &dyn Env,
        unbound: Option<&SqlError>,
        _bind: &mut dyn FnMut(&mut Binder) -> Result<Vec<Step>>,
    ) -> Result<Vec<Step>> {
        Err(unbound.cloned().unwrap_or_else(|| {
            SqlError::unsupported(format!(
                "statements bound when they run in function {} called inside a query",
                self.name
            ))
        }))
    }

    // Nothing a function called inside a query runs changes the schema.
    fn schema_changed(&self) -> bool {
        false
    }

    fn definitions_valid(&mut self, _deps: &Dependencies, _env: &dyn Env) -> Result<bool> {
        Ok(true)
    }

    fn interrupted(&self) -> Result<()> {
        self.limits.check()
    }

    fn rows_max(&self) -> usize {
        self.limits.rows_max
    }

    // A function called inside a query only reads: a failed block has nothing to undo.
    fn mark(&mut self) -> Option<Mark> {
        None
    }

    fn undo(&mut self, _mark: Option<Mark>) -> Result<()> {
        Ok(())
    }

    fn forget(&mut self, _mark: Option<Mark>) {}
}

/// Splits `INSERT | UPDATE | DELETE … RETURNING … INTO [STRICT] targets` into the statement
/// without its INTO clause and the targets (`None` for any other statement).
pub(crate) fn returning_into(text: &str) -> Result<Option<(String, Vec<String>)>> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, text).tokenize() else { return Ok(None) };
    let words: Vec<(usize, Keyword)> = tokens
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t {
            Token::Word(w) => Some((i, w.keyword)),
            _ => None,
        })
        .collect();
    if !matches!(words.first(), Some((_, Keyword::INSERT | Keyword::UPDATE | Keyword::DELETE))) {
        return Ok(None);
    }
    let mut depth = 0i32;
    let mut returning = false;
    for (i, t) in tokens.iter().enumerate() {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && w.keyword == Keyword::RETURNING => returning = true,
            Token::Word(w) if depth == 0 && returning && w.keyword == Keyword::INTO => {
                let write: String = tokens[..i].iter().map(|t| t.to_string()).collect();
                let mut targets = Vec::new();
                let mut current = String::new();
                for t in &tokens[i + 1..] {
                    match t {
                        Token::Word(w)
                            if w.keyword == Keyword::STRICT
                                && targets.is_empty()
                                && current.is_empty() => {}
                        Token::Word(w) => current.push_str(&match w.quote_style {
                            Some(_) => w.value.clone(),
                            None => w.value.to_lowercase(),
                        }),
                        Token::Period => current.push('.'),
                        Token::Comma => targets.push(std::mem::take(&mut current)),
                        Token::Whitespace(_) | Token::SemiColon => {}
                        other => {
                            return Err(SqlError::syntax(format!(
                                "syntax error at or near \"{other}\" in the INTO targets"
                            )))
                        }
                    }
                }
                if !current.is_empty() {
                    targets.push(current);
                }
                if targets.is_empty() {
                    return Err(SqlError::syntax("INTO needs a variable"));
                }
                return Ok(Some((write, targets)));
            }
            _ => {}
        }
    }
    Ok(None)
}

/// The error for a function that writes, called where its statement reads or writes rows.
pub(crate) fn writes_in_query(name: &str) -> SqlError {
    SqlError::unsupported(format!(
        "function {name} writes (INSERT, UPDATE or DELETE) and is called inside a query"
    ))
    .hint("Kiln runs a function's writes when it is called alone (SELECT f(…) without FROM, PERFORM f(…)) or by CALL; inside a query or a write it may only read.")
}

fn nested_too_deep() -> SqlError {
    SqlError::new(code::STATEMENT_TOO_COMPLEX, "stack depth limit exceeded").hint(format!(
        "Function bodies nest at most {NESTING_MAX} distinct functions deep where they are bound."
    ))
}

impl Writer<'_> {
    /// Runs an INSERT, UPDATE or DELETE of a function as a statement of its own: its AFTER
    /// triggers and NO ACTION checks run when it ends, apart from the calling statement's.
    /// Returns how many rows it wrote, and the rows it returned.
    pub(crate) fn nested(
        &mut self,
        step: &Step,
        frame: &[Value],
        env: &dyn Env,
    ) -> Result<(u64, Vec<Vec<Value>>)> {
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
            Step::Merge(p) => InitPlans::with(txn, &ctx, &limits, |i| i.merge((**p).clone()))
                .and_then(|p| self.merge(p, &ctx, &limits)),
            _ => unreachable!("nested runs writes"),
        };
        self.constraints = outer_constraints;
        self.triggers.pending = outer_pending;
        Ok(match result? {
            Output::Rows { rows, .. } => (rows.len() as u64, rows),
            Output::Command(tag) => {
                (tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0), vec![])
            }
            _ => (0, vec![]),
        })
    }
}
