//! Triggers.
//!
//! `CREATE TRIGGER` attaches a trigger function (`CREATE FUNCTION f() RETURNS trigger
//! LANGUAGE plpgsql …`, see `exec::routines`) to a table (`catalog::Trigger`, kept in the
//! table's definition, so a plan of a write to the table is bound again when its triggers
//! change).
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
//! **The function's program.** A function is bound (`exec::plpgsql`) once per statement and
//! trigger, its frame the trigger's `NEW` and `OLD` columns and `TG_` variables; the
//! writer runs it, so the SQL statements it runs are statements of their own: their AFTER
//! triggers and NO ACTION checks run when they end. Trigger calls nest at most
//! [`DEPTH_MAX`] deep (54001 past that: a trigger whose statements fire it again).

use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::ast;

use crate::bind::{name_as_written, object_name};
use crate::catalog::{Function, Table, Trigger};
use crate::error::{code, Result, SqlError};
use crate::exec::plpgsql::{Binder, Flow, Kind, Program, Returned};
use crate::exec::write::Writer;
use crate::expr::Env;
use crate::parse::trigger::CreateTrigger;
use crate::prepared::Dependencies;
use crate::session::Output;
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
    pub(crate) pending: Pending,
}

impl TriggerState {
    /// How deep trigger calls nest now (0: none runs).
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }
}

/// `name()` as messages write a function without arguments.
fn signature(name: &str) -> String {
    format!("{}()", crate::catalog::unqualified(name))
}

impl Writer<'_> {
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
        if table.partitioning.is_some() {
            return Err(SqlError::unsupported("triggers on a partitioned table")
                .hint("Create the trigger on each partition: rows written through the partitioned table fire their partition's row triggers."));
        }
        let mut function = name_as_written(&ct.function)?;
        if let Some(b) = BuiltinTrigger::named(&function) {
            function = b.name().to_string();
            if ct.when.is_some() {
                return Err(SqlError::unsupported(format!(
                    "a WHEN condition on a trigger running {}()",
                    b.name()
                )));
            }
        } else if self.db.catalog.function(&mut self.ts.txn, database, &function)?.is_none() {
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
            let mut binder = Binder {
                txn: &mut self.ts.txn,
                catalog: &self.db.catalog,
                database,
                env,
                routines: vec![],
                sql_args: None,
                bound: Default::default(),
                defer: false,
            };
            let (ty, used_new, used_old) = binder.trigger_condition(&table, when)?;
            if ty != DataType::Bool && ty != DataType::Unknown {
                return Err(SqlError::new(
                    code::DATATYPE_MISMATCH,
                    "argument of WHEN must be type boolean",
                ));
            }
            let invalid = |m: &str| Err(SqlError::new("42P17", m.to_string()));
            if !trigger.row && (used_new || used_old) {
                return invalid(
                    "statement trigger's WHEN condition cannot reference column values",
                );
            }
            if trigger.insert && used_old {
                return invalid("INSERT trigger's WHEN condition cannot reference OLD values");
            }
            if trigger.delete && used_new {
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
        let mut binder = Binder {
            txn: &mut self.ts.txn,
            catalog: &self.db.catalog,
            database: &database,
            env,
            routines: vec![(function.id, std::sync::Weak::new())],
            sql_args: None,
            bound: Default::default(),
            defer: true,
        };
        let (program, mut deps) = binder.plpgsql(
            Kind::Trigger(Arc::new(table.clone())),
            &function.body,
            trigger.when.as_deref(),
        )?;
        // The frame is the table's columns: the program depends on its definition too.
        match self.db.catalog.table(&mut self.ts.txn, &database, &table.name)? {
            Some(t) => deps.table(&t),
            None => deps = Dependencies::unusable(),
        }
        Ok((Arc::new(program), deps))
    }

    /// Calls a trigger's function: its frame built, its WHEN checked (`None`: not fired),
    /// its body run. Returns what it returned.
    fn call(
        &mut self,
        table: &Table,
        trigger: &Trigger,
        event: Event,
        new: Option<&[Value]>,
        old: Option<&[Value]>,
        env: &dyn Env,
    ) -> Result<Option<(Returned, Vec<Value>)>> {
        if let Some(b) = BuiltinTrigger::named(&trigger.function) {
            let mut frame = b.run(table, trigger, event, new, old)?;
            frame.extend(
                old.map_or_else(|| vec![Value::Null; table.columns.len()], <[Value]>::to_vec),
            );
            return Ok(Some((Returned::New, frame)));
        }
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
        let mut frame = program.frame(frame);
        if !program.when(self, &frame, env)? {
            return Ok(None);
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
        let result = program.run(self, &mut frame, env);
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
                Returned::Null | Returned::Value => None,
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
    let builtin = BuiltinTrigger::named(&t.function).is_some();
    def.push_str(&format!(
        " EXECUTE FUNCTION {}{}({})",
        if qualify && !builtin { "public." } else { "" },
        quote_ident(&t.function),
        args.join(", ")
    ));
    def
}

/// A trigger's WHEN condition with column `old` of its table renamed `new` (`NEW.old`,
/// `OLD.old`), as RENAME COLUMN leaves it.
pub(crate) fn rename_in_when(when: &str, old: &str, new: &str) -> Result<String> {
    let mut stmt = crate::exec::plpgsql::one_statement(&format!("SELECT ({when})"))?;
    let _ = ast::visit_expressions_mut(&mut stmt, |e| {
        if let ast::Expr::CompoundIdentifier(parts) = e {
            if parts.len() == 2 {
                let record = crate::bind::ident(&parts[0]);
                if (record == "new" || record == "old") && crate::bind::ident(&parts[1]) == old {
                    parts[1] = ast::Ident::new(crate::bind::quote_ident(new));
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
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

/// The trigger functions PostgreSQL has built in (in `pg_catalog`) that Kiln runs itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BuiltinTrigger {
    /// `tsvector_update_trigger(tsvector_column, 'schema.config', text_column, …)`: the
    /// tsvector column made from the text columns.
    TsVectorUpdate,
    /// `tsvector_update_trigger_column(tsvector_column, config_column, text_column, …)`:
    /// the same, the configuration read from a column of the row.
    TsVectorUpdateColumn,
}

impl BuiltinTrigger {
    /// The built-in trigger function `name` (bare or in `pg_catalog`), if it is one.
    pub(crate) fn named(name: &str) -> Option<BuiltinTrigger> {
        match name.strip_prefix("pg_catalog.").unwrap_or(name) {
            "tsvector_update_trigger" => Some(BuiltinTrigger::TsVectorUpdate),
            "tsvector_update_trigger_column" => Some(BuiltinTrigger::TsVectorUpdateColumn),
            _ => None,
        }
    }

    /// Its name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BuiltinTrigger::TsVectorUpdate => "tsvector_update_trigger",
            BuiltinTrigger::TsVectorUpdateColumn => "tsvector_update_trigger_column",
        }
    }

    /// Its OID in PostgreSQL's `pg_proc`.
    pub(crate) fn oid(self) -> i64 {
        match self {
            BuiltinTrigger::TsVectorUpdate => 3752,
            BuiltinTrigger::TsVectorUpdateColumn => 3753,
        }
    }

    /// Runs it for a row: the row to write. Checked as PostgreSQL checks when it fires: a
    /// BEFORE ROW trigger of INSERT or UPDATE, its arguments naming a tsvector column, a
    /// configuration and text columns (NULL values are skipped). An UPDATE that changes no
    /// text column (nor the configuration column) leaves the row as it is.
    fn run(
        self,
        table: &Table,
        trigger: &Trigger,
        event: Event,
        new: Option<&[Value]>,
        old: Option<&[Value]>,
    ) -> Result<Vec<Value>> {
        let name = self.name();
        let fail = |m: String| SqlError::new("39P01", format!("{name}: {m}"));
        if !trigger.row {
            return Err(fail("must be fired for row".into()));
        }
        if !trigger.before {
            return Err(fail("must be fired BEFORE event".into()));
        }
        let Some(new) = new.filter(|_| matches!(event, Event::Insert | Event::Update)) else {
            return Err(fail("must be fired for INSERT or UPDATE".into()));
        };
        if trigger.args.len() < 2 {
            return Err(fail(
                "arguments must be tsvector_field, ts_config, text_field1, ...)".into(),
            ));
        }
        let column_named = |c: &str, what: &str| {
            table.column(c).ok_or_else(|| {
                SqlError::new(
                    code::UNDEFINED_COLUMN,
                    format!("{what}column \"{c}\" does not exist"),
                )
            })
        };
        let column = |c: &str| column_named(c, "");
        let target = column_named(&trigger.args[0], "tsvector ")?;
        if table.columns[target].ty != DataType::TsVector {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!("column \"{}\" is not of tsvector type", trigger.args[0]),
            ));
        }
        let (config, config_column) = match self {
            BuiltinTrigger::TsVectorUpdate => {
                let written = &trigger.args[1];
                if !written.contains('.') {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!(
                            "text search configuration name \"{written}\" must be schema-qualified"
                        ),
                    ));
                }
                (Value::Text(written.clone()), None)
            }
            BuiltinTrigger::TsVectorUpdateColumn => {
                let c = column_named(&trigger.args[1], "config ")?;
                if table.columns[c].ty != DataType::RegConfig {
                    return Err(SqlError::new(
                        code::DATATYPE_MISMATCH,
                        format!("column \"{}\" is not of regconfig type", trigger.args[1]),
                    ));
                }
                if new[c].is_null() {
                    return Err(SqlError::new(
                        "22004",
                        format!("config column \"{}\" must not be null", trigger.args[1]),
                    ));
                }
                (new[c].clone(), Some(c))
            }
        };
        let mut texts = Vec::new();
        let mut changed = event == Event::Insert;
        for c in &trigger.args[2..] {
            let i = column(c)?;
            if !table.columns[i].ty.is_string() {
                return Err(SqlError::new(
                    code::DATATYPE_MISMATCH,
                    format!("column \"{c}\" is not of a character type"),
                ));
            }
            if let Some(old) = old {
                changed |= old[i] != new[i];
            }
            if let Value::Text(t) = &new[i] {
                texts.push(t.as_str());
            }
        }
        if let (Some(c), Some(old)) = (config_column, old) {
            changed |= old[c] != new[c];
        }
        let mut row = new.to_vec();
        if changed {
            // One document: positions run on from one column to the next.
            let document = Value::Text(texts.join(" "));
            row[target] = crate::textsearch::call(
                crate::expr::TsFunc::ToTsVector,
                &[config, document],
                Default::default(),
                &mut |_| {},
            )?;
        }
        Ok(row)
    }
}
