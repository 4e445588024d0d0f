//! Sequence DDL: CREATE and DROP SEQUENCE, and the sequences `serial` and identity columns
//! create for themselves (`crate::sequence` hands out their values).

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::*;
use crate::catalog::unqualified;
use crate::catalog::Table;
use crate::error::{code, Result, SqlError};
use crate::exec::write::*;
use crate::parse::sequence::{
    AlterIdentity, AlterSequence, AlterSequenceAction, IdentityAction, SequenceSpec,
};
use crate::sequence::{type_max, Sequence};
use crate::session::*;
use crate::types::DataType;

/// The integer type `serial`, `bigserial` and `smallserial` (and their `serialN` names)
/// stand for.
pub(crate) fn serial_type(t: &ast::DataType) -> Option<DataType> {
    let ast::DataType::Custom(name, _) = t else { return None };
    match crate::bind::name_as_written(name).ok()?.as_str() {
        "serial" | "serial4" => Some(DataType::Int4),
        "bigserial" | "serial8" => Some(DataType::Int8),
        "smallserial" | "serial2" => Some(DataType::Int2),
        _ => None,
    }
}

/// An integer option's value (`INCREMENT BY -2`).
fn option_value(e: &ast::Expr, what: &str) -> Result<i64> {
    let bad =
        || SqlError::new(code::SYNTAX, format!("{what} must be an integer constant, not {e}"));
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse::<i64>().map_err(|_| {
                SqlError::new(code::NUMERIC_OUT_OF_RANGE, format!("{what} {n} is out of range"))
            }),
            _ => Err(bad()),
        },
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => {
            option_value(expr, what)?.checked_neg().ok_or_else(|| {
                SqlError::new(code::NUMERIC_OUT_OF_RANGE, format!("{what} is out of range"))
            })
        }
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Plus, expr } | ast::Expr::Nested(expr) => {
            option_value(expr, what)
        }
        _ => Err(bad()),
    }
}

/// The options a statement gave (`Some(None)`: NO MINVALUE / NO MAXVALUE).
#[derive(Default)]
struct Given {
    increment: Option<i64>,
    min: Option<Option<i64>>,
    max: Option<Option<i64>>,
    start: Option<i64>,
    cache: Option<i64>,
    cycle: Option<bool>,
}

fn given(options: &[ast::SequenceOptions]) -> Result<Given> {
    let mut g = Given::default();
    for o in options {
        match o {
            ast::SequenceOptions::IncrementBy(e, _) => {
                g.increment = Some(option_value(e, "INCREMENT")?)
            }
            ast::SequenceOptions::MinValue(e) => {
                g.min = Some(e.as_ref().map(|e| option_value(e, "MINVALUE")).transpose()?)
            }
            ast::SequenceOptions::MaxValue(e) => {
                g.max = Some(e.as_ref().map(|e| option_value(e, "MAXVALUE")).transpose()?)
            }
            ast::SequenceOptions::StartWith(e, _) => g.start = Some(option_value(e, "START")?),
            ast::SequenceOptions::Cache(e) => g.cache = Some(option_value(e, "CACHE")?),
            ast::SequenceOptions::Cycle(no) => g.cycle = Some(!no),
        }
    }
    Ok(g)
}

fn invalid(m: String) -> SqlError {
    SqlError::new(code::INVALID_PARAMETER_VALUE, m)
}

fn check_type(ty: DataType) -> Result<()> {
    if !matches!(ty, DataType::Int2 | DataType::Int4 | DataType::Int8) {
        return Err(invalid("sequence type must be smallint, integer, or bigint".into()));
    }
    Ok(())
}

/// A sequence definition from its options, checked as PostgreSQL checks them.
pub(crate) fn sequence_def(
    id: u64,
    database: &str,
    name: &str,
    ty: DataType,
    options: &[ast::SequenceOptions],
    owned_by: Option<(String, String)>,
) -> Result<Sequence> {
    check_type(ty)?;
    let g = given(options)?;
    let increment = g.increment.unwrap_or(1);
    let (dmin, dmax) = Sequence::default_bounds(ty, increment);
    let (min, max) = (g.min.flatten().unwrap_or(dmin), g.max.flatten().unwrap_or(dmax));
    let seq = Sequence {
        id,
        key: rand::random(),
        database: database.to_string(),
        name: name.to_string(),
        ty,
        start: g.start.unwrap_or(if increment > 0 { min } else { max }),
        increment,
        min,
        max,
        cache: g.cache.unwrap_or(1),
        cycle: g.cycle.unwrap_or(false),
        owned_by,
        comment: None,
    };
    checked(seq)
}

/// `seq` altered by `options` (and `AS ty`), as PostgreSQL's ALTER SEQUENCE alters it: a
/// bound not given stays, unless it was the old type's limit and the type changes.
fn altered_def(seq: &Sequence, ty: DataType, options: &[ast::SequenceOptions]) -> Result<Sequence> {
    check_type(ty)?;
    let g = given(options)?;
    let increment = g.increment.unwrap_or(seq.increment);
    let (dmin, dmax) = Sequence::default_bounds(ty, increment);
    let old_top = type_max(seq.ty);
    let retyped = ty != seq.ty;
    let min = match g.min {
        Some(given) => given.unwrap_or(dmin),
        None if retyped && seq.min == -old_top - 1 => dmin,
        None => seq.min,
    };
    let max = match g.max {
        Some(given) => given.unwrap_or(dmax),
        None if retyped && seq.max == old_top => dmax,
        None => seq.max,
    };
    checked(Sequence {
        ty,
        start: g.start.unwrap_or(seq.start),
        increment,
        min,
        max,
        cache: g.cache.unwrap_or(seq.cache),
        cycle: g.cycle.unwrap_or(seq.cycle),
        ..seq.clone()
    })
}

/// A definition's checks: the bounds within the type and in order, START within them.
fn checked(seq: Sequence) -> Result<Sequence> {
    let Sequence { increment, min, max, start, cache, .. } = seq;
    if increment == 0 {
        return Err(invalid("INCREMENT must not be zero".into()));
    }
    let top = type_max(seq.ty);
    let type_name = seq.ty.sql_name();
    if min < -top - 1 || min > top {
        return Err(invalid(format!(
            "MINVALUE ({min}) is out of range for sequence data type {type_name}"
        )));
    }
    if max < -top - 1 || max > top {
        return Err(invalid(format!(
            "MAXVALUE ({max}) is out of range for sequence data type {type_name}"
        )));
    }
    if min >= max {
        return Err(invalid(format!("MINVALUE ({min}) must be less than MAXVALUE ({max})")));
    }
    if start < min {
        return Err(invalid(format!("START value ({start}) cannot be less than MINVALUE ({min})")));
    }
    if start > max {
        return Err(invalid(format!(
            "START value ({start}) cannot be greater than MAXVALUE ({max})"
        )));
    }
    if cache <= 0 {
        return Err(invalid(format!("CACHE ({cache}) must be greater than zero")));
    }
    Ok(seq)
}

impl Writer<'_> {
    /// A name for the sequence of `table.column` no relation has: `<table>_<column>_seq`,
    /// then with a number appended, as PostgreSQL chooses.
    pub(crate) fn sequence_name_for(
        &mut self,
        database: &str,
        table: &str,
        column: &str,
    ) -> Result<String> {
        // In the table's schema.
        let base = crate::catalog::beside(table, &format!("{}_{column}_seq", unqualified(table)));
        let mut name = base.clone();
        let mut n = 0;
        while self.db.catalog.relation_exists(&mut self.ts.txn, database, &name)? {
            n += 1;
            name = format!("{base}{n}");
        }
        Ok(name)
    }

    /// Creates the sequence a `serial` or identity column of `table` draws from.
    pub(crate) fn create_owned_sequence(
        &mut self,
        database: &str,
        table: &str,
        column: &str,
        ty: DataType,
        options: &[ast::SequenceOptions],
    ) -> Result<String> {
        let name = self.sequence_name_for(database, table, column)?;
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        let owner = Some((table.to_string(), column.to_string()));
        let seq = sequence_def(id, database, &name, ty, options, owner)?;
        self.db.catalog.put_sequence(&mut self.ts.txn, &seq)?;
        Ok(name)
    }

    pub(crate) fn create_sequence(
        &mut self,
        if_not_exists: bool,
        name: &ast::ObjectName,
        as_type: Option<&ast::DataType>,
        options: &[ast::SequenceOptions],
        owned_by: Option<&ast::ObjectName>,
        database: &str,
    ) -> Result<Output> {
        let name = new_object_name(name)?;
        if self.relation_taken(database, &name, if_not_exists)? {
            return Ok(Output::Command("CREATE SEQUENCE".into()));
        }
        let ty = match as_type {
            Some(t) => data_type(t)?,
            None => DataType::Int8,
        };
        let owner = match owned_by {
            None => None,
            Some(o) => self.owner(o, database)?,
        };
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        let seq = sequence_def(id, database, &name, ty, options, owner)?;
        self.db.catalog.put_sequence(&mut self.ts.txn, &seq)?;
        Ok(Output::Command("CREATE SEQUENCE".into()))
    }

    /// `ALTER TABLE … ALTER COLUMN c` of an identity: `DROP IDENTITY` (the column keeps its
    /// values, loses its default; its sequence is dropped, as in PostgreSQL), `SET GENERATED
    /// {ALWAYS | BY DEFAULT}`, and sequence options or `RESTART` (an `ALTER SEQUENCE` of its
    /// sequence). All in this transaction.
    pub(crate) fn alter_identity(&mut self, a: &AlterIdentity, database: &str) -> Result<Output> {
        let done = || Ok(Output::Command("ALTER TABLE".into()));
        let tname = object_name(&a.table)?;
        let Some(table) = self.db.catalog.table(&mut self.ts.txn, database, &tname)? else {
            if a.if_exists {
                self.skipping("00000", format!("relation \"{tname}\" does not exist"));
                return done();
            }
            return Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!("relation \"{tname}\" does not exist"),
            ));
        };
        let cname = ident(&a.column);
        let Some(p) = table.column(&cname) else {
            return Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{cname}\" of relation \"{tname}\" does not exist"),
            ));
        };
        let not_identity = || {
            SqlError::new(
                code::NOT_IN_PREREQUISITE_STATE,
                format!("column \"{cname}\" of relation \"{tname}\" is not an identity column"),
            )
        };
        let mut t = (*table).clone();
        match &a.action {
            IdentityAction::DropExpression { if_exists } => {
                if t.columns[p].generated.take().is_none() {
                    let message = format!(
                        "column \"{cname}\" of relation \"{tname}\" is not a stored generated column"
                    );
                    if *if_exists {
                        self.skipping("00000", message);
                        return done();
                    }
                    return Err(SqlError::new(code::NOT_IN_PREREQUISITE_STATE, message));
                }
                self.db.catalog.put_table(&mut self.ts.txn, &t)?;
            }
            IdentityAction::Drop { if_exists } => {
                let Some(identity) = t.columns[p].identity.take() else {
                    if *if_exists {
                        let skipped = not_identity().message;
                        self.skipping("00000", skipped);
                        return done();
                    }
                    return Err(not_identity());
                };
                self.db.catalog.put_table(&mut self.ts.txn, &t)?;
                if let Some(seq) =
                    self.db.catalog.sequence(&mut self.ts.txn, database, &identity.sequence)?
                {
                    self.db.catalog.delete_sequence(&mut self.ts.txn, &seq)?;
                    self.db.sequences.forget(seq.key);
                }
            }
            IdentityAction::Change { always, spec } => {
                let Some(identity) = t.columns[p].identity.as_mut() else {
                    return Err(not_identity());
                };
                if let Some(always) = always {
                    identity.always = *always;
                }
                let sequence = identity.sequence.clone();
                self.db.catalog.put_table(&mut self.ts.txn, &t)?;
                if **spec != SequenceSpec::default() {
                    let alter = AlterSequence {
                        if_exists: false,
                        name: ast::ObjectName::from(vec![ast::Ident::with_quote('"', sequence)]),
                        action: AlterSequenceAction::Options(spec.clone()),
                    };
                    self.alter_sequence(&alter, database)?;
                }
            }
        }
        done()
    }

    /// `ALTER SEQUENCE`: options (a new definition in this transaction), `OWNER TO` (Kiln
    /// has one role: nothing changes) or `RENAME TO` (the columns that draw from it follow).
    pub(crate) fn alter_sequence(&mut self, a: &AlterSequence, database: &str) -> Result<Output> {
        let done = || Ok(Output::Command("ALTER SEQUENCE".into()));
        let name = object_name(&a.name)?;
        let Some(seq) = self.db.catalog.sequence(&mut self.ts.txn, database, &name)? else {
            if a.if_exists {
                return done();
            }
            let code = if self.db.catalog.relation_exists(&mut self.ts.txn, database, &name)? {
                code::WRONG_OBJECT_TYPE
            } else {
                code::UNDEFINED_TABLE
            };
            return Err(SqlError::new(
                code,
                if code == code::WRONG_OBJECT_TYPE {
                    format!("\"{name}\" is not a sequence")
                } else {
                    format!("relation \"{name}\" does not exist")
                },
            ));
        };
        match &a.action {
            AlterSequenceAction::OwnerTo => done(),
            AlterSequenceAction::RenameTo(new) => {
                self.rename_sequence(
                    &seq,
                    &crate::exec::schema::renamed(&seq.name, new)?,
                    database,
                )?;
                done()
            }
            AlterSequenceAction::Options(spec) => {
                let ty = match &spec.data_type {
                    Some(t) => data_type(t)?,
                    None => seq.ty,
                };
                let mut new = altered_def(&seq, ty, &spec.options)?;
                if let Some(o) = &spec.owned_by {
                    new.owned_by = self.owner(o, database)?;
                }
                if let Some(restart) = &spec.restart {
                    let value = match restart {
                        Some(e) => option_value(e, "RESTART")?,
                        None => new.start,
                    };
                    if value < new.min {
                        return Err(invalid(format!(
                            "RESTART value ({value}) cannot be less than MINVALUE ({})",
                            new.min
                        )));
                    }
                    if value > new.max {
                        return Err(invalid(format!(
                            "RESTART value ({value}) cannot be greater than MAXVALUE ({})",
                            new.max
                        )));
                    }
                    // As PostgreSQL gives a restarted sequence new storage, the definition
                    // gets a new record key, written (durably) before this transaction
                    // commits: the restart takes effect with the commit, and a rollback or a
                    // loss leaves the old record, whose values are never handed out again.
                    new.key = rand::random();
                    let wait = |c| crate::ed::acknowledge(self.db, self.activity, c).map(|_| ());
                    self.db.sequences.set(&self.db.engine, &new, value, false, &wait)?;
                }
                self.db.catalog.put_sequence(&mut self.ts.txn, &new)?;
                done()
            }
        }
    }

    /// Renames a sequence: a new catalog entry (the same record key: its values go on), and
    /// the identity columns and `nextval` defaults that name it name the new one.
    pub(crate) fn rename_sequence(
        &mut self,
        seq: &Sequence,
        new: &str,
        database: &str,
    ) -> Result<()> {
        if self.db.catalog.relation_exists(&mut self.ts.txn, database, new)? {
            return Err(SqlError::new(
                code::DUPLICATE_TABLE,
                format!("relation \"{new}\" already exists"),
            ));
        }
        for (table, col) in self.sequence_users(database, &seq.name)? {
            let mut t =
                (*self.db.catalog.table_or_err(&mut self.ts.txn, database, &table.name)?).clone();
            let column = &mut t.columns[col];
            if let Some(id) = &mut column.identity {
                id.sequence = new.to_string();
            }
            if let Some(d) = &column.default {
                column.default = Some(default_with_sequence(d, &seq.name, new));
            }
            self.db.catalog.put_table(&mut self.ts.txn, &t)?;
        }
        self.db.catalog.delete_sequence(&mut self.ts.txn, seq)?;
        let renamed = Sequence { name: new.to_string(), ..seq.clone() };
        self.db.catalog.put_sequence(&mut self.ts.txn, &renamed)?;
        Ok(())
    }

    /// `OWNED BY table.column` (or `NONE`): the column must exist.
    fn owner(&mut self, o: &ast::ObjectName, database: &str) -> Result<Option<(String, String)>> {
        let parts: Vec<String> = o.0.iter().filter_map(|p| p.as_ident()).map(ident).collect();
        match parts.as_slice() {
            [none] if none == "none" => Ok(None),
            [table, column] | [_, table, column] => {
                let table = match parts.as_slice() {
                    [schema, ..] if parts.len() == 3 && schema != "public" => {
                        crate::catalog::qualified(schema, table)
                    }
                    _ if parts.len() == 3 => table.clone(),
                    _ => crate::bind::search::resolve(table),
                };
                let t = self.db.catalog.table_or_err(&mut self.ts.txn, database, &table)?;
                t.column_or_err(column)?;
                Ok(Some((table, column.clone())))
            }
            _ => Err(SqlError::new(code::INVALID_PARAMETER_VALUE, "invalid OWNED BY option")
                .hint("Specify OWNED BY table.column or OWNED BY NONE.")),
        }
    }

    /// The columns whose DEFAULT or identity draws from sequence `name`.
    fn sequence_users(&mut self, database: &str, name: &str) -> Result<Vec<(Arc<Table>, usize)>> {
        let mut users = Vec::new();
        for t in self.db.catalog.tables(&mut self.ts.txn, database)? {
            for (i, c) in t.columns.iter().enumerate() {
                let uses = c.identity.as_ref().is_some_and(|id| id.sequence == name)
                    || c.default.as_deref().is_some_and(|d| default_uses_sequence(d, name));
                if uses {
                    users.push((t.clone(), i));
                }
            }
        }
        Ok(users)
    }

    pub(crate) fn drop_sequences(
        &mut self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
        database: &str,
    ) -> Result<Output> {
        for n in names {
            let name = object_name(n)?;
            let Some(seq) = self.db.catalog.sequence(&mut self.ts.txn, database, &name)? else {
                if if_exists {
                    self.skipping("00000", format!("sequence \"{name}\" does not exist"));
                    continue;
                }
                return Err(SqlError::new(
                    code::UNDEFINED_TABLE,
                    format!("sequence \"{name}\" does not exist"),
                ));
            };
            for (table, col) in self.sequence_users(database, &name)? {
                let column = &table.columns[col];
                if column.identity.is_some() {
                    return Err(SqlError::new(
                        code::DEPENDENT_OBJECTS,
                        format!(
                            "cannot drop sequence {name} because column {} of table {} requires it",
                            column.name, table.name
                        ),
                    )
                    .hint(format!(
                        "You can drop column {} of table {} instead.",
                        column.name, table.name
                    )));
                }
                if !cascade {
                    return Err(crate::exec::write::depended_on(
                        &format!("sequence {name}"),
                        &[format!(
                            "default value for column {} of table {} depends on sequence {name}",
                            column.name, table.name
                        )],
                    ));
                }
                // CASCADE drops the default that uses the sequence (as PostgreSQL does).
                self.cascade_to(format!(
                    "default value for column {} of table {}",
                    column.name, table.name
                ));
                let mut t =
                    (*self.db.catalog.table_or_err(&mut self.ts.txn, database, &table.name)?)
                        .clone();
                t.columns[col].default = None;
                self.db.catalog.put_table(&mut self.ts.txn, &t)?;
            }
            self.db.catalog.delete_sequence(&mut self.ts.txn, &seq)?;
            self.db.sequences.forget(seq.key);
        }
        Ok(Output::Command("DROP SEQUENCE".into()))
    }

    /// `TRUNCATE … RESTART IDENTITY`: the sequences owned by columns of `table` start over.
    /// As PostgreSQL gives the sequence new storage, the definition gets a new record key
    /// in this transaction, so the restart commits, rolls back or is lost with it; values
    /// the old record handed out are never reused unless the transaction commits.
    pub(crate) fn restart_owned_sequences(&mut self, table: &Table) -> Result<()> {
        for seq in self.db.catalog.sequences(&mut self.ts.txn, &table.database)? {
            if seq.owned_by.as_ref().is_some_and(|(t, _)| *t == table.name) {
                let restarted = Sequence { key: rand::random(), ..(*seq).clone() };
                self.db.catalog.put_sequence(&mut self.ts.txn, &restarted)?;
            }
        }
        Ok(())
    }

    /// Drops the sequences owned by a column of `table` (with the table).
    pub(crate) fn drop_owned_sequences(&mut self, table: &Table) -> Result<()> {
        for seq in self.db.catalog.sequences(&mut self.ts.txn, &table.database)? {
            if seq.owned_by.as_ref().is_some_and(|(t, _)| *t == table.name) {
                self.db.catalog.delete_sequence(&mut self.ts.txn, &seq)?;
                self.db.sequences.forget(seq.key);
            }
        }
        Ok(())
    }
}

/// `nextval('<name>'::regclass)`, as PostgreSQL shows a `serial` column's default: the name
/// quoted when case folding would change it.
pub(crate) fn nextval_call(name: &str) -> String {
    format!("nextval('{}'::regclass)", nextval_arg(name, None))
}

/// A sequence's name as the text of a regclass literal (quoted when case folding would change
/// it), its quotes doubled for the SQL string: as stored (`shown` none: with its schema when
/// not in `public`, whatever the search path), or as catalog functions show it (`shown`
/// Some(qualify): see [`crate::pg::system::shown_relation`]).
fn nextval_arg(name: &str, shown: Option<bool>) -> String {
    let text = match shown {
        Some(qualify) => crate::pg::system::shown_relation(name, qualify),
        None => crate::pg::system::stored_relation(name),
    };
    text.replace('\'', "''")
}

/// The sequence a DEFAULT that is exactly `nextval('s')` draws from (a `serial` column's).
pub(crate) fn nextval_of(expr: &ast::Expr) -> Option<String> {
    let ast::Expr::Function(f) = expr else { return None };
    if !crate::bind::name_as_written(&f.name).is_ok_and(|n| n == "nextval") {
        return None;
    }
    let ast::FunctionArguments::List(list) = &f.args else { return None };
    match list.args.as_slice() {
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] => sequence_literal(arg),
        _ => None,
    }
}

/// Calls `f` with the first argument of each `nextval(…)` call in `expr`.
fn each_nextval_arg(expr: &mut ast::Expr, mut f: impl FnMut(&mut ast::Expr)) {
    let _ = ast::visit_expressions_mut(expr, |e| {
        if let ast::Expr::Function(call) = e {
            if crate::bind::name_as_written(&call.name).is_ok_and(|n| n == "nextval") {
                if let ast::FunctionArguments::List(list) = &mut call.args {
                    if let Some(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))) =
                        list.args.first_mut()
                    {
                        f(arg);
                    }
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// A `nextval` argument naming sequence `name` (`public.s` when `qualified`).
fn regclass_literal(name: &str, shown: Option<bool>) -> ast::Expr {
    crate::parse::parse_expr(&format!("'{}'::regclass", nextval_arg(name, shown)))
        .expect("a quoted name parses")
}

/// The sequences a stored DEFAULT calls `nextval` on, by name.
pub(crate) fn default_sequences(default: &str) -> Vec<String> {
    let Ok(mut expr) = crate::parse::parse_expr(default) else { return vec![] };
    let mut found = Vec::new();
    each_nextval_arg(&mut expr, |arg| found.extend(sequence_literal(arg)));
    found
}

/// Whether a stored DEFAULT calls `nextval` on sequence `name`.
pub(crate) fn default_uses_sequence(default: &str, name: &str) -> bool {
    default_sequences(default).iter().any(|n| n == name)
}

/// A default with its `nextval` calls of sequence `old` calling `new` instead.
fn default_with_sequence(default: &str, old: &str, new: &str) -> String {
    let Ok(mut expr) = crate::parse::parse_expr(default) else { return default.to_string() };
    if nextval_of(&expr).is_some_and(|s| s == old) {
        // A serial column's default, written as PostgreSQL shows it.
        return nextval_call(new);
    }
    each_nextval_arg(&mut expr, |arg| {
        if sequence_literal(arg).is_some_and(|n| n == old) {
            *arg = regclass_literal(new, None);
        }
    });
    expr.to_string()
}

/// A default as PostgreSQL shows it: its `nextval` calls name their sequences as catalog
/// functions do (`public.s` to a session whose search path lacks `public`, `app.s` unless
/// the path finds it; the text stays as stored otherwise).
pub(crate) fn default_shown(default: &str, qualify: bool) -> String {
    let Ok(mut expr) = crate::parse::parse_expr(default) else { return default.to_string() };
    if let Some(name) = nextval_of(&expr) {
        return format!("nextval('{}'::regclass)", nextval_arg(&name, Some(qualify)));
    }
    let mut changed = false;
    each_nextval_arg(&mut expr, |arg| {
        if let Some(name) = sequence_literal(arg) {
            *arg = regclass_literal(&name, Some(qualify));
            changed = true;
        }
    });
    if changed {
        expr.to_string()
    } else {
        default.to_string()
    }
}

/// A DEFAULT written under a search path that names created schemas, as stored: its `nextval`
/// calls name the sequences the path finds with their schemas, so the stored text means the
/// same under any path (stored defaults are read without one).
pub(crate) fn default_stored(default: &str, database: &str) -> String {
    if crate::bind::search::current_schemas().is_empty() {
        return default.to_string();
    }
    let Ok(mut expr) = crate::parse::parse_expr(default) else { return default.to_string() };
    let mut changed = false;
    each_nextval_arg(&mut expr, |arg| {
        let text = match arg {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) => Some(s.clone()),
                _ => None,
            },
            ast::Expr::Cast { expr, .. } => match expr.as_ref() {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::SingleQuotedString(s) => Some(s.clone()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        };
        if let Some(name) = text.and_then(|t| crate::sequence::parse_name(&t, Some(database)).ok())
        {
            *arg = regclass_literal(&name, None);
            changed = true;
        }
    });
    if changed {
        expr.to_string()
    } else {
        default.to_string()
    }
}

/// The catalog name of a sequence a new DEFAULT names (as [`nextval_of`] reads it, without the
/// search path): an unqualified name found along the path.
pub(crate) fn written(name: &str) -> String {
    if name.contains('.') {
        name.to_string()
    } else {
        crate::bind::search::resolve(name)
    }
}

/// The sequence a literal argument names (`'s'`, `'s'::regclass`).
fn sequence_literal(e: &ast::Expr) -> Option<String> {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => crate::sequence::parse_name(s, None).ok(),
            _ => None,
        },
        ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) => sequence_literal(expr),
        _ => None,
    }
}

/// 22023 unless `ty` is a type an identity column may have (smallint, integer, bigint), as
/// PostgreSQL's sequences require.
pub(crate) fn check_identity_type(ty: DataType) -> Result<()> {
    if matches!(ty, DataType::Int2 | DataType::Int4 | DataType::Int8) {
        return Ok(());
    }
    Err(SqlError::new(
        code::INVALID_PARAMETER_VALUE,
        "identity column type must be smallint, integer, or bigint",
    ))
}
