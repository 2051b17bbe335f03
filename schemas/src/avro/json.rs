//! apache-avro `Value` → the records' JSON form.
//!
//! The JSON form mirrors the Avro fields one for one: records are objects, `["null", T]` unions
//! are `null` or the value, enums are their symbols, maps are objects. A union of several
//! records (the `ops` union) becomes the branch's object with an `op` tag: the record's name in
//! snake_case without its `Op` suffix (`AttachEvidenceOp` → `attach_evidence`); a union of
//! source documents (records named `…Doc`, perhaps with `null`) takes a `kind` tag instead
//! (`CalendarDoc` → `calendar`).

use apache_avro::Schema;
use apache_avro::schema::{NamesRef, ResolvedSchema};
use apache_avro::types::Value;
use serde_json::{Map, Number, Value as Json};

/// A value that has no JSON form in our records.
#[derive(Debug, thiserror::Error)]
#[error("avro value has no json form: {0}")]
pub struct JsonError(String);

/// Converts `value`, written or resolved with `schema`, into its JSON form.
pub fn to_json(value: &Value, schema: &Schema) -> Result<Json, JsonError> {
    let resolved = ResolvedSchema::try_from(schema).map_err(|e| JsonError(e.to_string()))?;
    convert(value, schema, resolved.get_names())
}

fn deref<'a>(schema: &'a Schema, names: &'a NamesRef<'a>) -> Result<&'a Schema, JsonError> {
    match schema {
        Schema::Ref { name } => names
            .get(name)
            .copied()
            .ok_or_else(|| JsonError(format!("unresolved name {name:?}"))),
        other => Ok(other),
    }
}

/// `AttachEvidenceOp` → `attach_evidence`.
pub fn op_tag(record_name: &str) -> String {
    let base = record_name.strip_suffix("Op").unwrap_or(record_name);
    let mut out = String::with_capacity(base.len() + 4);
    for (i, c) in base.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn number(f: f64) -> Result<Json, JsonError> {
    Number::from_f64(f)
        .map(Json::Number)
        .ok_or_else(|| JsonError(format!("non-finite float {f}")))
}

fn convert(value: &Value, schema: &Schema, names: &NamesRef<'_>) -> Result<Json, JsonError> {
    let schema = deref(schema, names)?;
    Ok(match (value, schema) {
        (Value::Null, _) => Json::Null,
        (Value::Boolean(b), _) => Json::Bool(*b),
        (Value::Int(i), _) => Json::from(*i),
        (Value::Long(i), _) => Json::from(*i),
        (Value::Float(f), _) => number(f64::from(*f))?,
        (Value::Double(f), _) => number(*f)?,
        (Value::String(s), _) => Json::String(s.clone()),
        (Value::Bytes(b), _) => Json::Array(b.iter().map(|x| Json::from(*x)).collect()),
        (Value::Enum(_, symbol), _) => Json::String(symbol.clone()),
        (Value::Union(i, inner), Schema::Union(union)) => {
            let branches = union.variants();
            let branch = branches
                .get(*i as usize)
                .ok_or_else(|| JsonError(format!("union branch {i} missing")))?;
            let records = branches
                .iter()
                .filter(|b| matches!(deref(b, names), Ok(Schema::Record(_))))
                .count();
            let tagged = records >= 2
                && branches
                    .iter()
                    .all(|b| matches!(deref(b, names), Ok(Schema::Record(_) | Schema::Null)));
            let mut json = convert(inner, branch, names)?;
            if tagged
                && let (Schema::Record(record), Json::Object(obj)) =
                    (deref(branch, names)?, &mut json)
            {
                let name = &record.name.name;
                match name.strip_suffix("Doc") {
                    Some(doc) => obj.insert("kind".into(), Json::String(op_tag(doc))),
                    None => obj.insert("op".into(), Json::String(op_tag(name))),
                };
            }
            json
        }
        (Value::Array(items), Schema::Array(array)) => Json::Array(
            items
                .iter()
                .map(|v| convert(v, &array.items, names))
                .collect::<Result<_, _>>()?,
        ),
        (Value::Map(entries), Schema::Map(map)) => {
            let mut keys: Vec<&String> = entries.keys().collect();
            keys.sort();
            let mut obj = Map::new();
            for k in keys {
                obj.insert(k.clone(), convert(&entries[k], &map.types, names)?);
            }
            Json::Object(obj)
        }
        (Value::Record(fields), Schema::Record(record)) => {
            let mut obj = Map::new();
            for ((name, v), field) in fields.iter().zip(&record.fields) {
                obj.insert(name.clone(), convert(v, &field.schema, names)?);
            }
            Json::Object(obj)
        }
        (v, s) => return Err(JsonError(format!("{v:?} against {s:?}"))),
    })
}
