//! Conversions between canonical values / JSON and Lua values.

use digipology_kernel::Value;
use mlua::{Lua, Table, Value as LuaValue};

/// Deepest table nesting converted from Lua (cycles end here too).
pub const DEPTH_MAX: usize = 64;

/// A canonical value as a Lua value. Integral numbers within ±2^53 become
/// Lua integers; `null` becomes `nil`.
pub fn to_lua(lua: &Lua, v: &Value) -> mlua::Result<LuaValue> {
    Ok(match v {
        Value::Null => LuaValue::Nil,
        Value::Bool(b) => LuaValue::Boolean(*b),
        Value::Number(n) => number(*n),
        Value::String(s) => LuaValue::String(lua.create_string(s)?),
        Value::Array(items) => {
            let values = items
                .iter()
                .map(|i| to_lua(lua, i))
                .collect::<mlua::Result<Vec<_>>>()?;
            LuaValue::Table(lua.create_sequence_from(values)?)
        }
        Value::Object(map) => {
            let pairs = map
                .iter()
                .map(|(k, i)| Ok((k.as_str(), to_lua(lua, i)?)))
                .collect::<mlua::Result<Vec<_>>>()?;
            LuaValue::Table(lua.create_table_from(pairs)?)
        }
    })
}

/// A canonical object's entries as a Lua table (what [`to_lua`] makes of
/// `Value::Object(map.clone())`, without the clone).
pub fn map_to_lua(
    lua: &Lua,
    map: &std::collections::BTreeMap<String, Value>,
) -> mlua::Result<LuaValue> {
    let t = lua.create_table_with_capacity(0, map.len())?;
    for (k, v) in map {
        t.raw_set(k.as_str(), to_lua(lua, v)?)?;
    }
    Ok(LuaValue::Table(t))
}

/// A number as Lua sees it: an integer when it is one.
pub fn number(n: f64) -> LuaValue {
    if n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_992.0 {
        // Exact: an integral double within ±2^53.
        #[allow(clippy::cast_possible_truncation)]
        let i = n as i64;
        LuaValue::Integer(i)
    } else {
        LuaValue::Number(n)
    }
}

/// Most values one conversion writes out.
pub const VALUES_MAX: usize = 1_000_000;

/// Most values a match function's answer (`observe`, `legal_actions`,
/// `bot`, `score`, …) may hold: the room keeps and copies it on the host,
/// outside the VM's memory ceiling.
pub const ANSWER_VALUES_MAX: usize = 100_000;

thread_local! {
    /// Values written by the conversion running on this thread.
    static VALUES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The most the conversion running on this thread may write.
    static LIMIT: std::cell::Cell<usize> = const { std::cell::Cell::new(VALUES_MAX) };
    /// Bytes written by the conversion running on this thread (see
    /// [`bytes_of_value`]).
    static BYTES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The most bytes it may write.
    static BYTES_LIMIT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
    /// Why it stopped at its limit: the limit was what the instruction
    /// budget could pay for, not the size limit itself.
    static BUDGET_BOUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What one value written counts toward a conversion's byte limit: its
/// string's bytes (a key's too) and [`VALUE_BYTES`] for the value itself.
/// The room's byte budget counts held values the same way
/// (digipology_kernel::bytes).
pub const VALUE_BYTES: usize = 16;

/// Instructions charged for each value a conversion writes (a storage
/// write, a payload, a game function's answer): measured, with what the
/// host does with the value after (benches/charges.rs).
pub const CONVERT_COST: u64 = 32;

/// Bytes of text handed to the host per instruction charged, besides
/// [`CONVERT_COST`] per value: the host checks text is UTF-8 and copies
/// it, once or twice, wherever it goes.
pub const TEXT_BYTES_PER_INSTRUCTION: usize = 16;

/// What `bytes` of text handed to the host cost, in instructions.
pub fn text_cost(bytes: usize) -> u64 {
    u64::try_from(bytes / TEXT_BYTES_PER_INSTRUCTION).unwrap_or(u64::MAX)
}

/// Counts `extra` bytes toward the running conversion's byte limit.
fn add_bytes(extra: usize) -> Result<(), String> {
    let total = BYTES.with(|b| {
        let t = b.get().saturating_add(extra);
        b.set(t);
        t
    });
    let limit = BYTES_LIMIT.with(std::cell::Cell::get);
    if total > limit {
        return Err(format!(
            "a value may hold at most {limit} bytes here (the room's byte budget: game.json limits.bytesMax)"
        ));
    }
    Ok(())
}

/// A conversion's outcome with what it wrote: the result, the values and
/// bytes written, and whether it stopped because the instruction budget
/// could pay for no more.
pub struct Converted<T> {
    /// The value, or why it could not be converted.
    pub result: Result<T, String>,
    /// Values written (what the conversion is charged for).
    pub values: usize,
    /// Bytes written (their text is charged too: [`text_cost`]).
    pub bytes: usize,
    /// The budget, not a size limit, stopped it.
    pub budget_bound: bool,
}

/// Runs one top-level conversion `f` under these limits: at most
/// `values_max` values (and at most `affordable`, what the budget can pay
/// for), at most `bytes_max` bytes.
pub fn metered<T>(
    values_max: usize,
    affordable: usize,
    bytes_max: usize,
    f: impl FnOnce() -> Result<T, String>,
) -> Converted<T> {
    let limit = values_max.min(VALUES_MAX);
    let bound = affordable < limit;
    LIMIT.with(|l| l.set(limit.min(affordable)));
    BYTES_LIMIT.with(|l| l.set(bytes_max));
    BYTES.with(|b| b.set(0));
    BUDGET_BOUND.with(|b| b.set(bound));
    let result = f();
    let values = VALUES.with(std::cell::Cell::get);
    let bytes = BYTES.with(std::cell::Cell::get);
    LIMIT.with(|l| l.set(VALUES_MAX));
    BYTES_LIMIT.with(|l| l.set(usize::MAX));
    Converted {
        result,
        values,
        bytes,
        budget_bound: bound && values > affordable,
    }
}

/// Resolves a table that stands for canonical data held elsewhere (a
/// `storage` node) to that data; `None` for an ordinary table.
/// It gets the table and the nesting depth it sits at.
pub type Resolve<'a> = dyn Fn(&Table, usize) -> Option<Result<Value, String>> + 'a;

/// A Lua value as JSON (for subcommand payloads and storage).
///
/// Tables with keys 1..n are arrays, tables with string keys objects (an
/// empty table is an empty object); proxies (tables with a metatable and a
/// raw string `id`) become their id; the null sentinel is `null`.
///
/// `resolve` is asked first for every table: a storage node assigned
/// elsewhere is stored as a copy of its contents, not as the empty table
/// it is underneath.
///
/// # Errors
/// Functions, threads, userdata, non-finite numbers, mixed or non-string
/// keys, non-UTF-8 strings, and nesting deeper than [`DEPTH_MAX`].
pub fn to_json_with(
    v: &LuaValue,
    depth: usize,
    resolve: &Resolve<'_>,
) -> Result<serde_json::Value, String> {
    use serde_json::Value as J;
    if depth == 0 {
        VALUES.with(|n| n.set(0));
    }
    // A table that holds the same table twice, nested 40 times, is 2^40
    // values once written out: count what is written, not what is held.
    let written = VALUES.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    let limit = LIMIT.with(std::cell::Cell::get);
    if written > limit {
        if BUDGET_BOUND.with(std::cell::Cell::get) {
            return Err(crate::errors::BUDGET_MSG.to_owned());
        }
        return Err(format!(
            "a value may hold at most {limit} values (a table stored in several places counts each time)"
        ));
    }
    add_bytes(VALUE_BYTES)?;
    Ok(match v {
        LuaValue::Nil => J::Null,
        LuaValue::LightUserData(p) if p.0.is_null() => J::Null,
        LuaValue::Boolean(b) => J::Bool(*b),
        LuaValue::Integer(i) if i.unsigned_abs() <= 1 << 53 => J::from(*i),
        // Canonical numbers are doubles: a larger integer would silently
        // become a nearby one.
        LuaValue::Integer(i) => {
            return Err(format!(
                "the integer {i} is beyond ±2^53, where numbers are exact; store it as a string"
            ))
        }
        LuaValue::Number(n) => match serde_json::Number::from_f64(*n) {
            Some(num) => J::Number(num),
            None => {
                return Err(
                    "numbers must be finite (NaN and infinities have no canonical form)".into(),
                )
            }
        },
        LuaValue::String(s) => {
            add_bytes(s.as_bytes().len())?;
            match s.to_str() {
                Ok(s) => J::String(s.to_string()),
                Err(_) => return Err("strings must be valid UTF-8".into()),
            }
        }
        LuaValue::Table(t) => table_to_json(t, depth, resolve)?,
        other => return Err(format!("a {} has no canonical form", other.type_name())),
    })
}

fn table_to_json(
    t: &Table,
    depth: usize,
    resolve: &Resolve<'_>,
) -> Result<serde_json::Value, String> {
    if depth >= DEPTH_MAX {
        return Err(format!(
            "tables nested deeper than {DEPTH_MAX} levels (or a cycle)"
        ));
    }
    if let Some(found) = resolve(t, depth) {
        // A storage node stands for a copy of its contents: their bytes
        // count as if written here.
        let v = found?;
        add_bytes(crate::convert::bytes_of_value(&v))?;
        // Its values count toward the conversion's size limit (the copy
        // was charged per value already: not counted for the charge).
        let limit = LIMIT.with(std::cell::Cell::get);
        let written = VALUES.with(std::cell::Cell::get);
        let room = u64::try_from(limit.saturating_sub(written)).unwrap_or(u64::MAX);
        let mut nodes = 0u64;
        if !count_values(&v, &mut nodes, room) && !BUDGET_BOUND.with(std::cell::Cell::get) {
            return Err(format!(
                "a value may hold at most {limit} values (a table stored in several places counts each time)"
            ));
        }
        return Ok(value_to_json(&v));
    }
    if let Some(mt) = t.metatable() {
        if mt.raw_get::<bool>("__proxy").unwrap_or(false) {
            if let Ok(LuaValue::String(id)) = t.raw_get::<LuaValue>(1) {
                if let Ok(s) = id.to_str() {
                    return Ok(serde_json::Value::String(s.to_string()));
                }
            }
        }
    }
    let len = t.raw_len();
    let mut count = 0usize;
    let mut all_strings = true;
    let mut all_seq = true;
    for pair in t.pairs::<LuaValue, LuaValue>() {
        let (k, _) = pair.map_err(|e| e.to_string())?;
        count += 1;
        match k {
            LuaValue::String(_) => all_seq = false,
            LuaValue::Integer(i) if i >= 1 && usize::try_from(i).is_ok_and(|i| i <= len) => {
                all_strings = false;
            }
            _ => {
                all_seq = false;
                all_strings = false;
            }
        }
    }
    if count == 0 {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    if all_seq && count == len {
        let mut out = Vec::with_capacity(len);
        for i in 1..=len {
            let item: LuaValue = t.raw_get(i).map_err(|e| e.to_string())?;
            out.push(to_json_with(&item, depth + 1, resolve).map_err(|e| at_index(i, e))?);
        }
        return Ok(serde_json::Value::Array(out));
    }
    if !all_strings {
        return Err("tables must be arrays (keys 1..n) or have only string keys".into());
    }
    let mut map = serde_json::Map::new();
    for pair in t.pairs::<LuaValue, LuaValue>() {
        let (k, item) = pair.map_err(|e| e.to_string())?;
        if let LuaValue::String(k) = k {
            add_bytes(k.as_bytes().len())?;
            let key = k
                .to_str()
                .map_err(|_| "keys must be valid UTF-8".to_string())?
                .to_string();
            let item = to_json_with(&item, depth + 1, resolve).map_err(|e| at_key(&key, e))?;
            map.insert(key, item);
        }
    }
    Ok(serde_json::Value::Object(map))
}

/// How a conversion's error names where it happened: `at `path`: why`.
const AT: &str = "at `";

/// Longest key shown in an error's path (longer ones end with `…`).
const KEY_SHOWN_MAX: usize = 40;

/// `e`, which happened under list index `i`, with the index in its path.
fn at_index(i: usize, e: String) -> String {
    at_segment(&format!("[{i}]"), e)
}

/// `e`, which happened under `key`, with the key in its path: `.key` for
/// a name, `["key"]` for any other string (cut to [`KEY_SHOWN_MAX`] bytes).
fn at_key(key: &str, e: String) -> String {
    let name = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && key.len() <= KEY_SHOWN_MAX;
    if name {
        return at_segment(&format!(".{key}"), e);
    }
    let mut shown: String = key.chars().take(KEY_SHOWN_MAX).collect();
    if shown.len() < key.len() {
        shown.push('…');
    }
    at_segment(&format!("[{shown:?}]"), e)
}

/// Puts `segment` in front of `e`'s path (the innermost key is added
/// first, so each level prepends its own). The budget's own message stays
/// as it is: it is recognised by its text.
fn at_segment(segment: &str, e: String) -> String {
    if e == crate::errors::BUDGET_MSG {
        return e;
    }
    match e.strip_prefix(AT).and_then(|rest| rest.split_once("`: ")) {
        Some((path, why)) => format!("{AT}{segment}{path}`: {why}"),
        None => format!("{AT}{segment}`: {e}"),
    }
}

/// A Lua value as a canonical value (see [`to_json_with`]).
///
/// # Errors
/// As [`to_json_with`].
pub fn to_value_with(v: &LuaValue, resolve: &Resolve<'_>) -> Result<Value, String> {
    let json = to_json_with(v, 0, resolve)?;
    Value::from_json(&json).map_err(|e| e.message)
}

/// A canonical value as JSON.
pub fn value_to_json(v: &Value) -> serde_json::Value {
    v.to_json()
}

/// What a canonical value counts toward a byte limit: [`VALUE_BYTES`] per
/// value, plus its strings' and keys' bytes (the same measure as a
/// conversion's, and the room's byte budget's).
pub fn bytes_of_value(v: &Value) -> usize {
    usize::try_from(digipology_kernel::bytes::value_bytes(v)).unwrap_or(usize::MAX)
}

/// Counts the values in `v` into `nodes`; false as soon as they pass
/// `budget` (counting never costs more than the read would).
pub(crate) fn count_values(v: &Value, nodes: &mut u64, budget: u64) -> bool {
    *nodes += 1;
    if *nodes > budget {
        return false;
    }
    match v {
        Value::Array(a) => a.iter().all(|x| count_values(x, nodes, budget)),
        Value::Object(o) => o.values().all(|x| count_values(x, nodes, budget)),
        _ => true,
    }
}
