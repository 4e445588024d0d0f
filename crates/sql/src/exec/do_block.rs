//! `DO` blocks: PL/pgSQL run statement by statement in the session.
//!
//! A DO block may create what its later statements use (`CREATE TABLE t …; INSERT INTO t
//! …`), so unlike a function's body, which is bound once (`exec::plpgsql`), each statement
//! is parsed, bound and run when it is reached, as PostgreSQL plans a DO block's statements
//! when they first run. The variables live here: before a query, an INSERT, UPDATE or
//! DELETE, or an expression runs, each reference to a variable (`n`, `r.col`) becomes a
//! parameter holding the variable's value with its declared type. Other statements (DDL)
//! take no variables, as in PL/pgSQL; `EXECUTE` builds them from text.
//!
//! Every SQL statement and expression of the block is parsed, and every assignment's
//! target checked, before anything runs. Variables are not transactional: an error a
//! handler catches undoes the block's writes, not its assignments, as in PL/pgSQL.

use std::ops::ControlFlow;

use sqlparser::ast;

use crate::error::{code, Result, SqlError};
use crate::exec::plpgsql::{
    constant_variable, for_bound, for_step, no_destination, null_execute, strict_rows,
    unknown_variable,
};
use crate::expr::assign;
use crate::parse::do_block::{Block, Declaration, DoBlock, Execute, ForQuery, ForRange, Stmt};
use crate::prepared::PlanSlot;
use crate::session::{raise_notice, Notice, Output, Session};
use crate::types::{DataType, Value};

/// How deep DO blocks may run inside one another (`EXECUTE 'DO …'`).
const DO_DEPTH_MAX: usize = 16;

/// A variable: a value of a declared type, or a record whose fields a row gave.
struct Var {
    name: String,
    kind: VarKind,
    constant: bool,
    not_null: bool,
}

enum VarKind {
    Scalar(DataType, Value),
    /// A record: its fields' names, types and values once a row filled it.
    Record(Option<Vec<(String, DataType, Value)>>),
}

/// The variables in scope (innermost last; `FOUND` first) and the last statement's row
/// count (`GET DIAGNOSTICS … ROW_COUNT`).
struct Vars {
    list: Vec<Var>,
    row_count: i64,
}

impl Vars {
    fn find(&self, name: &str) -> Option<usize> {
        self.list.iter().rposition(|v| v.name == name)
    }

    fn scalar(name: &str, ty: DataType, value: Value) -> Var {
        Var {
            name: name.into(),
            kind: VarKind::Scalar(ty, value),
            constant: false,
            not_null: false,
        }
    }

    fn set_found(&mut self, found: bool) {
        // FOUND is the outermost variable (a declared `found` hides it, as in PL/pgSQL).
        self.list[0].kind = VarKind::Scalar(DataType::Bool, Value::Bool(found));
    }

    /// The value and type `name` or `record.field` refers to, if it is a variable's.
    fn value(&self, parts: &[String]) -> Result<Option<(Value, DataType)>> {
        match parts {
            [name] => match self.find(name).map(|k| &self.list[k].kind) {
                Some(VarKind::Scalar(ty, v)) => Ok(Some((v.clone(), *ty))),
                Some(VarKind::Record(_)) => Err(SqlError::unsupported(format!(
                    "the record variable \"{name}\" as a value (Kiln has no record type; take its fields, {name}.col)"
                ))),
                None => Ok(None),
            },
            [record, field] => match self.find(record).map(|k| &self.list[k].kind) {
                Some(VarKind::Record(fields)) => {
                    let (_, ty, v) = record_field(record, fields.as_deref(), field)?;
                    Ok(Some((v.clone(), *ty)))
                }
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// Assigns `v` to the variable (or record field) `target` names.
    fn assign(&mut self, target: &[String], v: Value, style: crate::style::Style) -> Result<()> {
        let unknown = || unknown_variable(target.join("."));
        let k = self.find(&target[0]).ok_or_else(unknown)?;
        let var = &mut self.list[k];
        if var.constant {
            return Err(constant_variable(&var.name));
        }
        match (&mut var.kind, target) {
            (VarKind::Scalar(ty, value), [_]) => {
                if var.not_null && v.is_null() {
                    return Err(null_into_not_null(&var.name));
                }
                *value = assign(v, *ty, style)?;
            }
            (VarKind::Record(fields), [record, field]) => {
                let fields = fields.as_mut().ok_or_else(|| unassigned(record))?;
                let Some(f) = fields.iter_mut().find(|f| f.0 == *field) else {
                    return Err(no_field(record, field));
                };
                f.2 = assign(v, f.1, style)?;
            }
            (VarKind::Record(_), [record]) => {
                return Err(SqlError::unsupported(format!(
                    "assigning a value to the record variable \"{record}\" (fill it with SELECT … INTO or FOR … IN)"
                )))
            }
            _ => return Err(unknown()),
        }
        Ok(())
    }
}

fn record_field<'a>(
    record: &str,
    fields: Option<&'a [(String, DataType, Value)]>,
    field: &str,
) -> Result<&'a (String, DataType, Value)> {
    let fields = fields.ok_or_else(|| unassigned(record))?;
    fields.iter().find(|f| f.0 == field).ok_or_else(|| no_field(record, field))
}

fn unassigned(record: &str) -> SqlError {
    SqlError::new("55000", format!("record \"{record}\" is not assigned yet"))
        .detail("The tuple structure of a not-yet-assigned record is indeterminate.")
}

fn no_field(record: &str, field: &str) -> SqlError {
    SqlError::new(code::UNDEFINED_COLUMN, format!("record \"{record}\" has no field \"{field}\""))
}

fn null_into_not_null(name: &str) -> SqlError {
    SqlError::new(
        "22004",
        format!("null value cannot be assigned to variable \"{name}\" declared NOT NULL"),
    )
}

/// A name as PL/pgSQL reads it: lowercased unless quoted.
fn name_parts(text: &str) -> Vec<String> {
    crate::parse::tokens_with_offsets(text)
        .map(|toks| {
            toks.into_iter()
                .filter_map(|t| match t.token {
                    sqlparser::tokenizer::Token::Word(w) => Some(match w.quote_style {
                        Some(_) => w.value,
                        None => w.value.to_lowercase(),
                    }),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// How a list of statements ended.
#[derive(Debug, PartialEq)]
enum Flow {
    Next,
    Exit,
    Continue,
    Return,
}

impl Session {
    /// Runs a `DO` block in the open transaction (`parse::do_block`). A block with
    /// handlers runs as a subtransaction: an error a handler catches undoes the block's
    /// statements, then the handler runs; an error none catches fails the statement.
    pub(crate) fn run_do(&mut self, block: &DoBlock) -> Result<Output> {
        if self.do_depth >= DO_DEPTH_MAX {
            return Err(SqlError::new(code::STATEMENT_TOO_COMPLEX, "stack depth limit exceeded")
                .hint(format!("DO blocks run inside one another at most {DO_DEPTH_MAX} deep.")));
        }
        self.do_depth += 1;
        let outcome = self.run_do_block(block);
        self.do_depth -= 1;
        // A position inside the block's code is not one in the DO statement's text.
        outcome.map_err(|mut e| {
            e.position = None;
            e.location = None;
            e
        })
    }

    fn run_do_block(&mut self, block: &DoBlock) -> Result<Output> {
        let mut scope: Vec<(String, bool)> = vec![("found".into(), false)];
        for d in &block.declarations {
            if let Some(e) = &d.default {
                do_query(&format!("SELECT ({e})"))?;
            }
            scope.push((d.name.clone(), d.constant));
        }
        check_block(&block.body, &mut scope)?;
        let mut vars = Vars {
            list: vec![Vars::scalar("found", DataType::Bool, Value::Bool(false))],
            row_count: 0,
        };
        for d in &block.declarations {
            let var = self.declare(&vars, d)?;
            vars.list.push(var);
        }
        self.do_block(&mut vars, &block.body, None)?;
        Ok(Output::Command("DO".into()))
    }

    /// A declared variable with its initial value (which may read those declared before).
    fn declare(&mut self, vars: &Vars, d: &Declaration) -> Result<Var> {
        let mut var = Var {
            name: d.name.clone(),
            kind: VarKind::Record(None),
            constant: d.constant,
            not_null: d.not_null,
        };
        if d.ty.eq_ignore_ascii_case("record") {
            if d.default.is_some() || d.not_null || d.constant {
                return Err(SqlError::unsupported(
                    "a record variable with a default, NOT NULL or CONSTANT",
                ));
            }
            return Ok(var);
        }
        let named = crate::exec::plpgsql::type_named(&d.ty)?;
        let ty = {
            let ts = self.txn.as_mut().expect("a transaction is open");
            crate::bind::resolve_type(&named, &self.db.catalog, &mut ts.txn, &self.database)?
        };
        let value = match &d.default {
            Some(e) => {
                let v = self.do_eval(vars, e)?.0;
                if d.not_null && v.is_null() {
                    return Err(null_into_not_null(&d.name));
                }
                assign(v, ty, self.style())?
            }
            None => Value::Null,
        };
        var.kind = VarKind::Scalar(ty, value);
        Ok(var)
    }

    fn do_block(
        &mut self,
        vars: &mut Vars,
        block: &Block,
        caught: Option<&SqlError>,
    ) -> Result<Flow> {
        if block.handlers.is_empty() {
            return self.do_statements(vars, &block.statements, caught);
        }
        let pos = self.txn.as_ref().map_or(0, |t| t.savepoints.len());
        self.push_savepoint(String::new());
        let depth = vars.list.len();
        let outcome = self.do_statements(vars, &block.statements, caught);
        vars.list.truncate(depth);
        let handler = match &outcome {
            Err(e) => block.handlers.iter().find(|h| h.catches(e.code)),
            Ok(_) => None,
        };
        if handler.is_some() {
            self.rollback_to_savepoint(pos)?;
        }
        // The block's own savepoint goes either way (an error no handler catches fails the
        // transaction, as in PostgreSQL).
        self.release_savepoint_at(pos);
        match (handler, outcome) {
            (Some(h), Err(e)) => {
                // The handler sees SQLSTATE and SQLERRM.
                vars.list.push(Vars::scalar(
                    "sqlstate",
                    DataType::Text,
                    Value::Text(e.code.into()),
                ));
                vars.list.push(Vars::scalar(
                    "sqlerrm",
                    DataType::Text,
                    Value::Text(e.message.clone()),
                ));
                let flow = self.do_statements(vars, &h.statements, Some(&e));
                vars.list.truncate(depth);
                flow
            }
            (_, outcome) => outcome,
        }
    }

    fn do_statements(
        &mut self,
        vars: &mut Vars,
        statements: &[Stmt],
        caught: Option<&SqlError>,
    ) -> Result<Flow> {
        for s in statements {
            self.activity.check_interrupt()?;
            let flow = match s {
                Stmt::Sql(text) => {
                    self.do_sql_statement(vars, text)?;
                    Flow::Next
                }
                Stmt::Perform(query) => {
                    let out = self.run_with(vars, do_query(query)?)?;
                    let n = row_count(&out);
                    vars.row_count = n;
                    vars.set_found(n > 0);
                    Flow::Next
                }
                Stmt::Assign(target, e) => {
                    let v = self.do_eval(vars, e)?.0;
                    let style = self.style();
                    vars.assign(target, v, style)?;
                    Flow::Next
                }
                Stmt::If(arms, otherwise) => {
                    let mut taken = otherwise;
                    for (condition, body) in arms {
                        if self.do_condition(vars, condition, "IF")? {
                            taken = body;
                            break;
                        }
                    }
                    self.do_statements(vars, taken, caught)?
                }
                Stmt::Raise(r) => {
                    self.do_raise(vars, r, caught)?;
                    Flow::Next
                }
                Stmt::Assert(condition, message) => {
                    if !self.do_condition(vars, condition, "ASSERT")? {
                        let message = match message {
                            Some(m) => self.do_text(vars, m)?.unwrap_or_else(|| "<NULL>".into()),
                            None => "assertion failed".into(),
                        };
                        return Err(SqlError::new("P0004", message));
                    }
                    Flow::Next
                }
                Stmt::Execute(ex) => {
                    self.do_execute(vars, ex)?;
                    Flow::Next
                }
                Stmt::Block(b) => self.do_block(vars, b, caught)?,
                Stmt::Return(None) => Flow::Return,
                Stmt::Exit(exit, condition) => {
                    let taken = match condition {
                        Some(c) => {
                            self.do_condition(vars, c, if *exit { "EXIT" } else { "CONTINUE" })?
                        }
                        None => true,
                    };
                    match (taken, exit) {
                        (false, _) => Flow::Next,
                        (true, true) => Flow::Exit,
                        (true, false) => Flow::Continue,
                    }
                }
                Stmt::Loop(condition, body) => loop {
                    self.activity.check_interrupt()?;
                    if let Some(c) = condition {
                        if !self.do_condition(vars, c, "WHILE")? {
                            break Flow::Next;
                        }
                    }
                    match self.do_statements(vars, body, caught)? {
                        Flow::Return => break Flow::Return,
                        Flow::Exit => break Flow::Next,
                        Flow::Next | Flow::Continue => {}
                    }
                },
                Stmt::ForRange(f) => self.do_for_range(vars, f, caught)?,
                Stmt::ForQuery(f) => self.do_for_query(vars, f, caught)?,
                Stmt::GetDiagnostics(targets) => {
                    let style = self.style();
                    for t in targets {
                        // Names the parser has already read (lowercased unless quoted).
                        vars.assign(std::slice::from_ref(t), Value::Int(vars.row_count), style)?;
                    }
                    Flow::Next
                }
                other @ (Stmt::Return(Some(_))
                | Stmt::ReturnNext(_)
                | Stmt::ReturnQuery(_)
                | Stmt::ReturnExecute(_)) => return Err(other.not_in_do_block()),
            };
            if flow != Flow::Next {
                return Ok(flow);
            }
        }
        Ok(Flow::Next)
    }

    /// An SQL statement of the block: `SELECT … INTO`, a write (`… RETURNING … INTO`), or
    /// any other statement a DO block may run.
    fn do_sql_statement(&mut self, vars: &mut Vars, text: &str) -> Result<()> {
        if let Some((write, targets)) = crate::exec::plpgsql::returning_into(text)? {
            let stmt = do_query_or_write(&write)?;
            let out = self.run_with(vars, stmt)?;
            // Names the parser has read (lowercased unless quoted), `record.field` split.
            let parts: Vec<Vec<String>> =
                targets.iter().map(|t| t.split('.').map(str::to_string).collect()).collect();
            return self.fill_targets(vars, &parts, out, false, true);
        }
        if let Some(u) = crate::parse::utility(text)? {
            let out = self.do_utility(u)?;
            vars.row_count = row_count(&out);
            return Ok(());
        }
        let (text, strict) = strip_strict(text);
        for mut stmt in do_sql(&text)? {
            let mut into = None;
            if let ast::Statement::Query(q) = &mut stmt {
                if let ast::SetExpr::Select(s) = q.body.as_mut() {
                    into = s.into.take();
                }
                if into.is_none() {
                    return Err(no_destination());
                }
            }
            let out = self.run_with(vars, stmt)?;
            match into {
                Some(into) => {
                    let targets: Vec<Vec<String>> = into
                        .targets
                        .iter()
                        .map(|t| match t {
                            ast::Expr::Identifier(i) => Ok(vec![crate::bind::ident(i)]),
                            ast::Expr::CompoundIdentifier(p) if p.len() == 2 => {
                                Ok(vec![crate::bind::ident(&p[0]), crate::bind::ident(&p[1])])
                            }
                            other => Err(unknown_variable(other)),
                        })
                        .collect::<Result<_>>()?;
                    self.fill_targets(vars, &targets, out, strict, true)?;
                }
                None => {
                    let n = row_count(&out);
                    vars.row_count = n;
                    vars.set_found(n > 0);
                }
            }
        }
        Ok(())
    }

    /// Puts a statement's first row into `targets` (NULLs without one; `strict`: exactly
    /// one row or P0002 / P0003), sets the row count, and FOUND when `found`.
    fn fill_targets(
        &mut self,
        vars: &mut Vars,
        parts: &[Vec<String>],
        out: Output,
        strict: bool,
        found: bool,
    ) -> Result<()> {
        let Output::Rows { columns, rows, .. } = out else {
            return Err(SqlError::syntax("INTO used with a command that cannot return data"));
        };
        if strict {
            // Only EXECUTE leaves FOUND alone, and only it gives no hint.
            strict_rows(rows.len(), found)?;
        }
        vars.row_count = rows.len() as i64;
        if found {
            vars.set_found(!rows.is_empty());
        }
        let row = rows.into_iter().next();
        let style = self.style();
        // One record: its fields are the columns.
        if let [one] = parts {
            if let Some(k) = vars.find(&one[0]).filter(|_| one.len() == 1) {
                if let VarKind::Record(fields) = &mut vars.list[k].kind {
                    let values = row.unwrap_or_else(|| vec![Value::Null; columns.len()]);
                    *fields = Some(
                        columns.into_iter().zip(values).map(|((n, t), v)| (n, t, v)).collect(),
                    );
                    return Ok(());
                }
            }
        }
        if parts.len() != columns.len() {
            return Err(SqlError::syntax(format!(
                "the query gives {} columns into {} variables",
                columns.len(),
                parts.len()
            )));
        }
        let values = row.unwrap_or_else(|| vec![Value::Null; columns.len()]);
        for (target, v) in parts.iter().zip(values) {
            vars.assign(target, v, style)?;
        }
        Ok(())
    }

    /// `EXECUTE string [INTO …] [USING …]`: the string's statements run with the USING
    /// values as `$1`, `$2`, … (FOUND is left as it was, as in PL/pgSQL).
    fn do_execute(&mut self, vars: &mut Vars, ex: &Execute) -> Result<()> {
        let text = self.execute_text(vars, &ex.sql)?;
        // A statement the SQL parser does not read (CREATE TRIGGER, DO, …) runs as it is.
        if let Some(u) = crate::parse::utility(&text)? {
            if !ex.into.is_empty() {
                return Err(SqlError::syntax("INTO used with a command that cannot return data"));
            }
            let out = self.do_utility(u)?;
            vars.row_count = row_count(&out);
            return Ok(());
        }
        let (statements, params, types) = self.dynamic(vars, &text, &ex.using)?;
        if !ex.into.is_empty() && statements.len() != 1 {
            return Err(SqlError::syntax("EXECUTE … INTO takes one statement"));
        }
        for stmt in statements {
            let slot = PlanSlot::new(types.clone(), None);
            let out = self.run(&stmt, &params, Some(&slot))?;
            if ex.into.is_empty() {
                vars.row_count = row_count(&out);
            } else {
                let parts: Vec<Vec<String>> = ex.into.iter().map(|t| name_parts(t)).collect();
                self.fill_targets(vars, &parts, out, ex.strict, false)?;
            }
        }
        Ok(())
    }

    /// The text EXECUTE runs: its expression's value (22004 for NULL).
    fn execute_text(&mut self, vars: &Vars, sql: &str) -> Result<String> {
        self.do_text(vars, sql)?.ok_or_else(null_execute)
    }

    /// The statements of a dynamic string (refused where a DO block cannot run them) and
    /// the USING values and their types.
    fn dynamic(
        &mut self,
        vars: &Vars,
        text: &str,
        using: &[String],
    ) -> Result<(Vec<ast::Statement>, Vec<Value>, Vec<DataType>)> {
        let (mut params, mut types) = (Vec::with_capacity(using.len()), Vec::new());
        for u in using {
            let (v, t) = self.do_eval(vars, u)?;
            params.push(v);
            types.push(if t == DataType::Unknown { DataType::Text } else { t });
        }
        let statements = crate::parse::parse(text)?;
        for s in &statements {
            check_allowed(s, text)?;
        }
        Ok((statements, params, types))
    }

    fn do_for_range(
        &mut self,
        vars: &mut Vars,
        f: &ForRange,
        caught: Option<&SqlError>,
    ) -> Result<Flow> {
        let bound = |s: &mut Session, e: &str, what: &str| -> Result<i64> {
            let v = s.do_eval(vars, e)?.0;
            for_bound(v, what, s.style())
        };
        let low = bound(self, &f.low, "lower bound")?;
        let high = bound(self, &f.high, "upper bound")?;
        let by = for_step(match &f.step {
            Some(e) => bound(self, e, "BY value")?,
            None => 1,
        })?;
        // The loop variable: an integer of its own, seen inside the loop only.
        let depth = vars.list.len();
        vars.list.push(Vars::scalar(&f.var, DataType::Int4, Value::Null));
        let mut i = low;
        let mut flow = Flow::Next;
        while if f.reverse { i >= high } else { i <= high } {
            self.activity.check_interrupt()?;
            vars.list[depth].kind = VarKind::Scalar(DataType::Int4, Value::Int(i));
            match self.do_statements(vars, &f.body, caught) {
                Ok(Flow::Return) => {
                    flow = Flow::Return;
                    break;
                }
                Ok(Flow::Exit) => break,
                Ok(_) => {}
                Err(e) => {
                    vars.list.truncate(depth);
                    return Err(e);
                }
            }
            match if f.reverse { i.checked_sub(by) } else { i.checked_add(by) } {
                Some(n) => i = n,
                None => break,
            }
        }
        vars.list.truncate(depth);
        // FOUND tells whether the loop ran at least once.
        vars.set_found(if f.reverse { low >= high } else { low <= high });
        Ok(flow)
    }

    fn do_for_query(
        &mut self,
        vars: &mut Vars,
        f: &ForQuery,
        caught: Option<&SqlError>,
    ) -> Result<Flow> {
        let out = match &f.execute {
            Some(using) => {
                let text = self.execute_text(vars, &f.query)?;
                let (mut statements, params, types) = self.dynamic(vars, &text, using)?;
                if statements.len() != 1 || !matches!(statements[0], ast::Statement::Query(_)) {
                    return Err(SqlError::new(
                        code::WRONG_OBJECT_TYPE,
                        "cannot open a query that is not a SELECT as a loop's rows",
                    ));
                }
                let slot = PlanSlot::new(types, None);
                self.run(&statements.remove(0), &params, Some(&slot))?
            }
            None => self.run_with(vars, do_query(&f.query)?)?,
        };
        let Output::Rows { columns, rows, .. } = out else {
            return Err(SqlError::syntax("a FOR loop's query gives no rows"));
        };
        let target = vec![f.var.clone()];
        let record =
            matches!(vars.find(&target[0]).map(|k| &vars.list[k].kind), Some(VarKind::Record(_)));
        if !record && vars.find(&target[0]).is_none() {
            return Err(SqlError::syntax(
                "loop variable of loop over rows must be a record variable or list of scalar variables",
            ));
        }
        if !record && columns.len() != 1 {
            return Err(SqlError::syntax(format!(
                "the query gives {} columns into 1 variable",
                columns.len()
            )));
        }
        let any = !rows.is_empty();
        let style = self.style();
        let mut flow = Flow::Next;
        for row in rows {
            self.activity.check_interrupt()?;
            if record {
                let k = vars.find(&target[0]).expect("found above");
                vars.list[k].kind = VarKind::Record(Some(
                    columns.iter().cloned().zip(row).map(|((n, t), v)| (n, t, v)).collect(),
                ));
            } else {
                let v = row.into_iter().next().unwrap_or(Value::Null);
                vars.assign(&target, v, style)?;
            }
            match self.do_statements(vars, &f.body, caught)? {
                Flow::Return => {
                    flow = Flow::Return;
                    break;
                }
                Flow::Exit => break,
                _ => {}
            }
        }
        vars.set_found(any);
        Ok(flow)
    }

    /// A statement the SQL parser does not read, in the block's transaction (VACUUM cannot
    /// run there, as in PostgreSQL; SET CONSTRAINTS and MOVE are refused).
    fn do_utility(&mut self, u: crate::parse::Utility) -> Result<Output> {
        match u {
            crate::parse::Utility::Vacuum(_) => {
                return Err(SqlError::new(
                    code::ACTIVE_TXN,
                    "VACUUM cannot be executed from a function",
                ))
            }
            _ if !u.is_transactional() => {
                return Err(SqlError::unsupported("SET CONSTRAINTS and MOVE in a DO block"))
            }
            _ => {}
        }
        self.utility_in_txn(u)
    }

    /// Runs a statement with the variables it refers to as parameters (a query, INSERT,
    /// UPDATE or DELETE; any other statement as it is).
    fn run_with(&mut self, vars: &Vars, mut stmt: ast::Statement) -> Result<Output> {
        use ast::Statement as S;
        if !matches!(stmt, S::Query(_) | S::Insert(_) | S::Update(_) | S::Delete(_) | S::Merge(_)) {
            return self.run(&stmt, &[], None);
        }
        let (params, types) = bind_vars(vars, &mut stmt)?;
        if params.is_empty() {
            return self.run(&stmt, &[], None);
        }
        let slot = PlanSlot::new(types, None);
        self.run(&stmt, &params, Some(&slot))
    }

    /// An expression's value and type.
    fn do_eval(&mut self, vars: &Vars, e: &str) -> Result<(Value, DataType)> {
        let out = self.run_with(vars, do_query(&format!("SELECT ({e})"))?)?;
        let Output::Rows { columns, mut rows, .. } = out else {
            return Ok((Value::Null, DataType::Unknown));
        };
        let ty = columns.first().map_or(DataType::Unknown, |c| c.1);
        let v = rows.pop().and_then(|r| r.into_iter().next()).unwrap_or(Value::Null);
        Ok((v, ty))
    }

    /// An expression's value as text in its type's output form (None: NULL).
    fn do_text(&mut self, vars: &Vars, e: &str) -> Result<Option<String>> {
        let (v, ty) = self.do_eval(vars, e)?;
        Ok(v.to_text_in(ty, self.style()))
    }

    /// Whether a condition is true (NULL is not); `what` names the statement for errors.
    fn do_condition(&mut self, vars: &Vars, condition: &str, what: &str) -> Result<bool> {
        match self.do_eval(vars, condition)?.0 {
            Value::Bool(b) => Ok(b),
            // An integer converts as int4::boolean does.
            Value::Int(i) => Ok(i != 0),
            Value::Null => Ok(false),
            other => Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!(
                    "the condition of {what} must be boolean, not {}",
                    other.natural_type().sql_name()
                ),
            )),
        }
    }

    fn do_raise(
        &mut self,
        vars: &Vars,
        r: &crate::parse::do_block::Raise,
        caught: Option<&SqlError>,
    ) -> Result<()> {
        use crate::parse::do_block::{raised, Level};
        if r.format.is_none() && r.condition.is_none() && r.using.is_empty() {
            return Err(match caught {
                Some(e) if r.level == Level::Exception => e.clone(),
                _ => SqlError::new(
                    "0Z002",
                    "RAISE without parameters cannot be used outside an exception handler",
                ),
            });
        }
        let mut params = Vec::with_capacity(r.params.len());
        for p in &r.params {
            params.push(self.do_text(vars, p)?);
        }
        let mut using = Vec::with_capacity(r.using.len());
        for (_, e) in &r.using {
            using.push(self.do_text(vars, e)?);
        }
        let e = raised(r, &params, &using)?.expect("a RAISE with parameters raises");
        if r.level == Level::Exception {
            return Err(e);
        }
        raise_notice(&self.notices, Notice { level: r.level, fields: e });
        Ok(())
    }
}

/// Rewrites the references to variables in a statement into parameters: their values and
/// types, in parameter order.
fn bind_vars(vars: &Vars, stmt: &mut ast::Statement) -> Result<(Vec<Value>, Vec<DataType>)> {
    let mut params: Vec<(Vec<String>, Value, DataType)> = Vec::new();
    let flow = ast::visit_expressions_mut(stmt, |e| {
        let parts = match e {
            ast::Expr::Identifier(i) => vec![crate::bind::ident(i)],
            ast::Expr::CompoundIdentifier(p) if p.len() == 2 => {
                vec![crate::bind::ident(&p[0]), crate::bind::ident(&p[1])]
            }
            _ => return ControlFlow::Continue(()),
        };
        match vars.value(&parts) {
            Ok(Some((v, ty))) => {
                let n = match params.iter().position(|p| p.0 == parts) {
                    Some(n) => n,
                    None => {
                        params.push((parts, v, ty));
                        params.len() - 1
                    }
                };
                *e = ast::Expr::Value(ast::Value::Placeholder(format!("${}", n + 1)).into());
                ControlFlow::Continue(())
            }
            Ok(None) => ControlFlow::Continue(()),
            Err(err) => ControlFlow::Break(err),
        }
    });
    if let ControlFlow::Break(e) = flow {
        return Err(e);
    }
    Ok(params.into_iter().map(|(_, v, t)| (v, t)).unzip())
}

/// The rows a statement gave or changed.
fn row_count(out: &Output) -> i64 {
    match out {
        Output::Rows { rows, .. } => rows.len() as i64,
        Output::Command(tag) => tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0),
        _ => 0,
    }
}

/// `… INTO STRICT targets`: the text without STRICT, and whether it was there.
fn strip_strict(text: &str) -> (String, bool) {
    use sqlparser::tokenizer::Token;
    let Ok(toks) = crate::parse::tokens_with_offsets(text) else { return (text.into(), false) };
    let is = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let words: Vec<_> = toks.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    for pair in words.windows(2) {
        if is(&pair[0].token, "into") && is(&pair[1].token, "strict") {
            let at = pair[1].start;
            let mut out = text.to_string();
            out.replace_range(at..at + "strict".len(), "");
            return (out, true);
        }
    }
    (text.into(), false)
}

/// Refuses what a DO block cannot run (transaction control, session commands).
fn check_allowed(stmt: &ast::Statement, text: &str) -> Result<()> {
    use ast::Statement as S;
    let allowed = !matches!(
        stmt,
        S::StartTransaction { .. }
            | S::Commit { .. }
            | S::Rollback { .. }
            | S::Savepoint { .. }
            | S::ReleaseSavepoint { .. }
            | S::Set(_)
            | S::ShowVariable { .. }
            | S::Prepare { .. }
            | S::Execute { .. }
            | S::Deallocate { .. }
            | S::Copy { .. }
            | S::Declare { .. }
            | S::Fetch { .. }
            | S::Close { .. }
            | S::Discard { .. }
            | S::LISTEN { .. }
            | S::UNLISTEN { .. }
            | S::CreateDatabase { .. }
    );
    if !allowed {
        return Err(SqlError::unsupported(format!(
            "{} in a DO block",
            text.split_whitespace().next().unwrap_or_default().to_uppercase()
        )));
    }
    Ok(())
}

/// The statements of SQL text in a DO block, refused where a block cannot run them.
fn do_sql(text: &str) -> Result<Vec<ast::Statement>> {
    let parsed = crate::parse::parse(text)?;
    for stmt in &parsed {
        check_allowed(stmt, text)?;
    }
    Ok(parsed)
}

/// The one query of a PERFORM, a FOR loop or an expression (`SELECT (expr)`): text that
/// parses as more than one statement is a syntax error, as in PL/pgSQL.
fn do_query(text: &str) -> Result<ast::Statement> {
    let mut parsed = crate::parse::parse(text)?;
    match (parsed.pop(), parsed.is_empty()) {
        (Some(stmt @ ast::Statement::Query(_)), true) => Ok(stmt),
        _ => Err(SqlError::syntax(format!("syntax error in the expression or query \"{text}\""))),
    }
}

/// The one write of `… RETURNING … INTO` (its INTO taken off).
fn do_query_or_write(text: &str) -> Result<ast::Statement> {
    let mut parsed = crate::parse::parse(text)?;
    match (parsed.pop(), parsed.is_empty()) {
        (Some(stmt), true) => Ok(stmt),
        _ => Err(SqlError::syntax(format!("syntax error in \"{text}\""))),
    }
}

/// Parses every statement and expression of a block and checks its assignments' targets
/// (`scope`: the variables' names and whether each is CONSTANT), before anything runs.
fn check_block(block: &Block, scope: &mut Vec<(String, bool)>) -> Result<()> {
    check_statements(&block.statements, scope)?;
    for h in &block.handlers {
        let depth = scope.len();
        scope.push(("sqlstate".into(), false));
        scope.push(("sqlerrm".into(), false));
        check_statements(&h.statements, scope)?;
        scope.truncate(depth);
    }
    Ok(())
}

fn check_expr(e: &str) -> Result<()> {
    do_query(&format!("SELECT ({e})")).map(|_| ())
}

fn check_statements(statements: &[Stmt], scope: &mut Vec<(String, bool)>) -> Result<()> {
    for s in statements {
        match s {
            Stmt::Sql(text) if crate::parse::utility(text)?.is_some() => {}
            Stmt::Sql(text) => match crate::exec::plpgsql::returning_into(text)? {
                Some((write, _)) => {
                    do_query_or_write(&write)?;
                }
                None => {
                    do_sql(&strip_strict(text).0)?;
                }
            },
            Stmt::Perform(query) => {
                do_query(query)?;
            }
            Stmt::Assign(target, e) => {
                check_expr(e)?;
                match scope.iter().rev().find(|(n, _)| *n == target[0]) {
                    None => return Err(unknown_variable(target.join("."))),
                    Some((name, true)) => return Err(constant_variable(name)),
                    Some(_) => {}
                }
            }
            Stmt::If(arms, otherwise) => {
                for (condition, body) in arms {
                    check_expr(condition)?;
                    check_statements(body, scope)?;
                }
                check_statements(otherwise, scope)?;
            }
            Stmt::Raise(r) => {
                for e in r.params.iter().chain(r.using.iter().map(|(_, e)| e)) {
                    check_expr(e)?;
                }
            }
            Stmt::Assert(condition, message) => {
                for e in std::iter::once(condition).chain(message) {
                    check_expr(e)?;
                }
            }
            Stmt::Execute(ex) => {
                for e in std::iter::once(&ex.sql).chain(&ex.using) {
                    check_expr(e)?;
                }
            }
            Stmt::Block(b) => check_block(b, scope)?,
            Stmt::Return(None) => {}
            other @ (Stmt::Return(Some(_))
            | Stmt::ReturnNext(_)
            | Stmt::ReturnQuery(_)
            | Stmt::ReturnExecute(_)) => return Err(other.not_in_do_block()),
            Stmt::Exit(_, condition) => {
                if let Some(c) = condition {
                    check_expr(c)?;
                }
            }
            Stmt::Loop(condition, body) => {
                if let Some(c) = condition {
                    check_expr(c)?;
                }
                check_statements(body, scope)?;
            }
            Stmt::ForRange(f) => {
                for e in [&f.low, &f.high].into_iter().chain(&f.step) {
                    check_expr(e)?;
                }
                scope.push((f.var.clone(), false));
                let checked = check_statements(&f.body, scope);
                scope.pop();
                checked?;
            }
            Stmt::ForQuery(f) => {
                match &f.execute {
                    Some(using) => {
                        for e in std::iter::once(&f.query).chain(using) {
                            check_expr(e)?;
                        }
                    }
                    None => {
                        do_query(&f.query)?;
                    }
                }
                check_statements(&f.body, scope)?;
            }
            Stmt::GetDiagnostics(_) => {}
        }
    }
    Ok(())
}
