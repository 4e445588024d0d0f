//! Enum types (`CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')`): their definitions, how
//! a label becomes a value, and where a new label sorts.
//!
//! A column or expression of an enum type has type [`DataType::Enum`], which holds the
//! whole definition — OIDs, name and labels — as a `&'static EnumType`, so that `DataType`
//! stays `Copy` and a value can be read from text anywhere a type is known (a parameter,
//! COPY, a cast) without going back to the catalog. Definitions are interned: one copy per
//! distinct definition, up to [`INTERNED_BYTES_MAX`] in all. The catalog keeps the
//! definition under `y/<db>/<name>`; a table's columns hold copies of it, which `ALTER TYPE`
//! rewrites along with the type, so a definition seen through a transaction is always the
//! type's definition in that transaction.
//!
//! A value ([`Value::Enum`]) carries its label and its sort order: values compare by sort
//! order, as PostgreSQL's do, and rows and index keys need no catalog to be read. A label's
//! sort order never changes once given: `ALTER TYPE … ADD VALUE … BEFORE/AFTER` takes the
//! midpoint of its neighbours (PostgreSQL renumbers the labels when floats run out of room
//! between two; Kiln, whose stored keys hold the orders, refuses that label with 54000
//! instead — after 52 additions in a row right after one of two adjacent labels).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::error::{code, Result, SqlError};
use crate::types::{DataType, Value};

/// Most bytes of labels and names held by interned definitions in all (each distinct
/// definition, including every version `ALTER TYPE` makes, is kept for the process's
/// life).
pub const INTERNED_BYTES_MAX: usize = 64 << 20;

/// Most labels one enum type may have.
pub const LABELS_MAX: usize = 65_536;

/// Longest label, in bytes (PostgreSQL's NAMEDATALEN - 1).
pub const LABEL_BYTES_MAX: usize = 63;

/// An enum type's definition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnumType {
    /// Its OID (`pg_type.oid`).
    pub oid: u32,
    /// Its array type's OID (`_name`).
    pub array_oid: u32,
    /// Its name.
    pub name: String,
    /// Its labels, in sort order.
    pub labels: Vec<EnumLabel>,
    /// Its `COMMENT ON TYPE` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// One label of an enum type.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnumLabel {
    /// Its OID (`pg_enum.oid`).
    pub oid: u32,
    /// Its sort order (`pg_enum.enumsortorder`).
    pub sort: f64,
    /// The label.
    pub label: String,
}

/// Two definitions are of the same type when their OIDs are the same, whatever labels each
/// has: a column, a parameter and a value of type `mood` compare before and after `ALTER
/// TYPE mood ADD VALUE`. (Interning compares whole definitions: [`Content`].)
impl PartialEq for EnumType {
    fn eq(&self, other: &EnumType) -> bool {
        self.oid == other.oid
    }
}

impl Eq for EnumType {}

impl Hash for EnumType {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.oid.hash(h);
    }
}

/// A definition compared whole, as the interner keys them.
struct Content(EnumType);

impl PartialEq for Content {
    fn eq(&self, other: &Content) -> bool {
        let (a, b) = (&self.0, &other.0);
        a.oid == b.oid
            && a.array_oid == b.array_oid
            && a.name == b.name
            && a.comment == b.comment
            && a.labels.len() == b.labels.len()
            && a.labels.iter().zip(&b.labels).all(|(x, y)| {
                x.oid == y.oid && x.sort.to_bits() == y.sort.to_bits() && x.label == y.label
            })
    }
}

impl Eq for Content {}

impl Hash for Content {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let d = &self.0;
        d.oid.hash(h);
        d.name.hash(h);
        d.comment.hash(h);
        d.labels.len().hash(h);
        for l in &d.labels {
            l.oid.hash(h);
            l.sort.to_bits().hash(h);
            l.label.hash(h);
        }
    }
}

/// Whether two types hold the very same enum definitions (or none): what a kept plan needs
/// of the columns it was bound against.
pub fn identical(a: DataType, b: DataType) -> bool {
    let def = |t: DataType| match t {
        DataType::Enum(e) | DataType::Array(&DataType::Enum(e)) => Some(e as *const EnumType),
        _ => None,
    };
    def(a) == def(b)
}

/// A value of an enum type: its label and the label's sort order.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumValue {
    /// The label's sort order: what values compare by.
    pub sort: f64,
    /// The label.
    pub label: String,
}

impl EnumType {
    /// The value for `text`, or 22P02 when the type has no such label.
    pub fn parse(&self, text: &str) -> Result<Value> {
        match self.labels.iter().find(|l| l.label == text) {
            Some(l) => Ok(Value::Enum(EnumValue { sort: l.sort, label: l.label.clone() })),
            None => Err(SqlError::new(
                code::INVALID_TEXT,
                format!(
                    "invalid input value for enum {}: \"{text}\"",
                    crate::bind::quote_ident(&self.name)
                ),
            )),
        }
    }

    /// The label at position `i`, as a value.
    pub fn value(&self, i: usize) -> Value {
        let l = &self.labels[i];
        Value::Enum(EnumValue { sort: l.sort, label: l.label.clone() })
    }

    /// The position of label `label`.
    pub fn position(&self, label: &str) -> Option<usize> {
        self.labels.iter().position(|l| l.label == label)
    }

    /// The sort order a new label takes: last, or before or after an existing label
    /// (`neighbour`, `before`). 54000 when two neighbours leave no room between them.
    pub fn sort_for(&self, neighbour: Option<(usize, bool)>) -> Result<f64> {
        let n = self.labels.len();
        let sort = |i: usize| self.labels[i].sort;
        let (low, high) = match neighbour {
            None if n == 0 => return Ok(1.0),
            None => return Ok(sort(n - 1) + 1.0),
            Some((0, true)) => return Ok(sort(0) - 1.0),
            Some((i, false)) if i + 1 == n => return Ok(sort(i) + 1.0),
            Some((i, true)) => (sort(i - 1), sort(i)),
            Some((i, false)) => (sort(i), sort(i + 1)),
        };
        let mid = low + (high - low) / 2.0;
        if mid <= low || mid >= high {
            return Err(SqlError::new(
                code::PROGRAM_LIMIT,
                format!("no room for another label of enum {} at that position", self.name),
            )
            .detail("Kiln never renumbers the labels of an enum type, because stored keys hold their sort orders, and the labels around this position were added between each other too many times.")
            .hint("Add the label at another position, or create a new type."));
        }
        Ok(mid)
    }
}

/// 42602 for a label PostgreSQL would not take.
pub fn check_label(label: &str) -> Result<()> {
    if label.len() > LABEL_BYTES_MAX {
        return Err(SqlError::new(code::INVALID_NAME, format!("invalid enum label \"{label}\""))
            .detail(format!("Labels must be {LABEL_BYTES_MAX} bytes or less.")));
    }
    Ok(())
}

/// 54000 past [`LABELS_MAX`] labels.
pub fn check_count(n: usize) -> Result<()> {
    if n > LABELS_MAX {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            format!("an enum type may have at most {LABELS_MAX} labels"),
        ));
    }
    Ok(())
}

struct Interned {
    defs: HashMap<Content, &'static EnumType>,
    bytes: usize,
}

/// The one interned copy of `def` (54000 once [`INTERNED_BYTES_MAX`] is spent).
pub fn intern(def: EnumType) -> Result<&'static EnumType> {
    static INTERNED: OnceLock<Mutex<Interned>> = OnceLock::new();
    let mut map = INTERNED
        .get_or_init(|| Mutex::new(Interned { defs: HashMap::new(), bytes: 0 }))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let def = Content(def);
    if let Some(d) = map.defs.get(&def) {
        return Ok(d);
    }
    let Content(def) = def;
    let size = 64 + def.name.len() + def.labels.iter().map(|l| 40 + l.label.len()).sum::<usize>();
    if map.bytes + size > INTERNED_BYTES_MAX {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            format!(
                "too many enum type definitions since the server started (at most {} MiB of them)",
                INTERNED_BYTES_MAX >> 20
            ),
        )
        .hint("Restart the server to release the definitions of dropped and altered types."));
    }
    map.bytes += size;
    // Leaked once per distinct definition, bounded above.
    let d: &'static EnumType = Box::leak(Box::new(def.clone()));
    map.defs.insert(Content(def), d);
    Ok(d)
}

/// The type of `def` with OID `oid`: the enum type itself, or its array type.
pub fn type_with_oid(def: &'static EnumType, oid: u32) -> DataType {
    let t = DataType::Enum(def);
    if def.oid == oid {
        t
    } else {
        crate::array::array_of(t).expect("an enum type has an array type")
    }
}

/// The type with `oid` in `ty`, itself or its element: what `ALTER TYPE` rewrites.
pub fn uses(ty: DataType, oid: u32) -> bool {
    match ty {
        DataType::Enum(e) => e.oid == oid,
        DataType::Array(&DataType::Enum(e)) => e.oid == oid,
        _ => false,
    }
}

/// `ty` with the enum type `def` (same OID) in place of the one it holds.
pub fn replace(ty: DataType, def: &'static EnumType) -> Result<DataType> {
    Ok(match ty {
        DataType::Enum(e) if e.oid == def.oid => DataType::Enum(def),
        DataType::Array(&DataType::Enum(e)) if e.oid == def.oid => {
            crate::array::array_of(DataType::Enum(def))?
        }
        other => other,
    })
}

/// Stored as the definition itself and interned again when read.
pub(crate) mod serde_ref {
    use super::EnumType;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(t: &&'static EnumType, s: S) -> Result<S::Ok, S::Error> {
        (**t).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<&'static EnumType, D::Error> {
        let t = EnumType::deserialize(d)?;
        super::intern(t).map_err(|e| serde::de::Error::custom(e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mood() -> EnumType {
        EnumType {
            oid: 20000,
            array_oid: 20001,
            name: "mood".into(),
            labels: ["sad", "ok", "happy"]
                .iter()
                .enumerate()
                .map(|(i, l)| EnumLabel {
                    oid: 20002 + i as u32,
                    sort: i as f64 + 1.0,
                    label: l.to_string(),
                })
                .collect(),
            comment: None,
        }
    }

    #[test]
    fn new_labels_sort_between_their_neighbours_and_never_move_others() {
        let m = mood();
        assert_eq!(m.sort_for(None).unwrap(), 4.0);
        assert_eq!(m.sort_for(Some((0, true))).unwrap(), 0.0);
        assert_eq!(m.sort_for(Some((2, false))).unwrap(), 4.0);
        assert_eq!(m.sort_for(Some((1, true))).unwrap(), 1.5);
        assert_eq!(m.sort_for(Some((1, false))).unwrap(), 2.5);
        // Always just after "sad": the gap halves until there is no room.
        let mut m = mood();
        let mut added = 0;
        loop {
            match m.sort_for(Some((0, false))) {
                Ok(s) => {
                    assert!(s > m.labels[0].sort && s < m.labels[1].sort);
                    m.labels.insert(1, EnumLabel { oid: 0, sort: s, label: format!("x{added}") });
                    added += 1;
                }
                Err(e) => {
                    assert_eq!(e.code, code::PROGRAM_LIMIT);
                    break;
                }
            }
        }
        // Adjacent labels (sort orders 1 and 2) leave room for 52 halvings of a double.
        assert_eq!(added, 52);
        assert!(m.labels.windows(2).all(|w| w[0].sort < w[1].sort));
    }

    #[test]
    fn labels_parse_to_their_sort_order_and_others_are_refused() {
        let m = mood();
        assert_eq!(
            m.parse("ok").unwrap(),
            Value::Enum(EnumValue { sort: 2.0, label: "ok".into() })
        );
        let e = m.parse("OK").unwrap_err();
        assert_eq!(e.code, code::INVALID_TEXT);
        assert_eq!(e.message, "invalid input value for enum mood: \"OK\"");
        assert!(check_label(&"x".repeat(63)).is_ok());
        assert_eq!(check_label(&"x".repeat(64)).unwrap_err().code, code::INVALID_NAME);
    }

    #[test]
    fn interning_keeps_one_copy_per_definition() {
        let a = intern(mood()).unwrap();
        let b = intern(mood()).unwrap();
        assert!(std::ptr::eq(a, b));
        let mut other = mood();
        other.labels[0].label = "blue".into();
        assert!(!std::ptr::eq(a, intern(other).unwrap()));
    }
}
