//! A script's `storage`: reads that copy nothing, writes in place through
//! the transaction, and the limits on both (depth, values, the instruction
//! cost of copying storage into storage).

use std::collections::BTreeMap;

use digipology_kernel::Value;
use mlua::{Lua, MultiValue, Table, Value as LuaValue};

use crate::access::{ok_true, refusal, ret, text, Access, Call};
use crate::convert::{count_values, to_lua, to_value_with, DEPTH_MAX};

/// What a storage read costs the instruction budget. The prelude's
/// `storage` nodes are uncounted (whether a node was kept from an earlier
/// call or is made now must not change the budget), so the natives charge
/// about what those nodes' Lua ran before: a read, a write, a length, the
/// listing of keys (plus per key).
const READ_CHARGE: i64 = 10;
const WRITE_CHARGE: i64 = 15;
const LEN_CHARGE: i64 = 5;
const KEY_CHARGE: i64 = 2;

/// A key of a storage read: an object's key or a list's index (from 1).
#[derive(Clone, Copy)]
pub(crate) enum Key<'a> {
    /// A string key.
    Str(&'a [u8]),
    /// An integer index.
    Int(i64),
}

/// What a storage read found, with nothing borrowed: a string is a pointer
/// and length into the state (read before anything changes it).
#[derive(Clone, Copy)]
pub(crate) enum Found {
    /// Absent (or null).
    Nil,
    /// A boolean.
    Bool(bool),
    /// A number that is an integer (as [`crate::convert::number`] says).
    Int(i64),
    /// Any other number.
    Num(f64),
    /// A string: its bytes' address and length.
    Str(*const u8, usize),
    /// A table: the prelude makes a node of it.
    Table,
}

/// A scalar a script writes to storage, read off the Lua stack.
#[derive(Clone, Copy)]
pub(crate) enum Scalar<'a> {
    /// `nil`: the key is removed.
    Nil,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Num(f64),
    /// A string's bytes.
    Str(&'a [u8]),
}

/// How a raw write went.
#[derive(Clone, Copy)]
pub(crate) enum Wrote {
    /// Written.
    Done,
    /// The budget is spent.
    Budget,
    /// Refused: the kind's name and the message's bytes, kept in
    /// `Shared` until the next refusal.
    Refused(&'static str, *const u8, usize),
}

/// Whether a write of `value` at `key` takes the raw path: a key and value
/// that cannot fail to convert (valid UTF-8, an index from 1, an integer
/// within ±2^53, a finite float). Anything else takes the Lua path, whose
/// messages say what is wrong.
pub(crate) fn plain_write(key: Key<'_>, value: Scalar<'_>) -> bool {
    let key_ok = match key {
        Key::Str(k) => std::str::from_utf8(k).is_ok(),
        Key::Int(i) => i >= 1,
    };
    let value_ok = match value {
        Scalar::Nil | Scalar::Bool(_) => true,
        Scalar::Int(i) => i.unsigned_abs() <= 1 << 53,
        Scalar::Num(n) => n.is_finite(),
        Scalar::Str(s) => std::str::from_utf8(s).is_ok(),
    };
    key_ok && value_ok
}

/// A plain scalar as storage holds it: converted as `to_value_with`
/// converts the same Lua value.
fn scalar_value(v: Scalar<'_>) -> Result<Option<Value>, String> {
    use serde_json::Value as J;
    let json = match v {
        Scalar::Nil => return Ok(None),
        Scalar::Bool(b) => J::Bool(b),
        Scalar::Int(i) => J::from(i),
        Scalar::Num(n) => serde_json::Number::from_f64(n)
            .map(J::Number)
            .ok_or("numbers must be finite (NaN and infinities have no canonical form)")?,
        Scalar::Str(s) => J::String(
            std::str::from_utf8(s)
                .map_err(|_| "strings must be valid UTF-8")?
                .to_owned(),
        ),
    };
    Value::from_json(&json).map(Some).map_err(|e| e.message)
}

/// Whether a node's read cache may keep what a read found (`raw.rs`): a
/// string key of the root, whatever it holds (nothing too), or of a
/// top-level table (`parent`) that holds a scalar or nothing. Exactly
/// these reads go uncharged, so a read costs the same cached or not — and
/// whether its node keeps a cache or not.
pub(crate) fn cacheable(key: Key<'_>, parent: Option<&[u8]>, found: Found) -> bool {
    matches!(key, Key::Str(_)) && (parent.is_none() || !matches!(found, Found::Table))
}

/// The entry of an object (string key) or list (integer index from 1).
fn entry_at<'v>(v: &'v Value, key: Key<'_>) -> Option<&'v Value> {
    match (v, key) {
        (Value::Object(o), Key::Str(k)) => o.get(std::str::from_utf8(k).ok()?),
        (Value::Array(a), Key::Int(i)) => a.get(usize::try_from(i).ok()?.checked_sub(1)?),
        _ => None,
    }
}

impl Call<'_, '_, '_> {
    /// Charges `n` instructions of a storage native to the budget; a
    /// `budget` error when it is spent.
    fn charge_storage(&self, n: i64) -> mlua::Result<()> {
        crate::errors::spend(self.shared, n)
    }

    /// The storage value at a path, borrowed (a read copies nothing).
    fn storage_node(&self, script: &LuaValue, path: &LuaValue) -> Option<&Value> {
        let script = text(script)?;
        let path = path_of(path).ok()?;
        let root = self.state().storage().get(&script)?;
        walk(root, &path)
    }

    /// The canonical contents a `storage` node stands for (its metatable
    /// names the script and the path), or `None` for any other table.
    ///
    /// Only the running script's own storage resolves (a table dressed up
    /// as another script's node is refused), the copy is charged to the
    /// instruction budget per value it holds ([`COPY_COST`]), and it may
    /// not nest deeper than [`DEPTH_MAX`] where it is stored — so copying
    /// storage into itself cannot grow work or memory past the limits.
    pub(crate) fn storage_of(&self, t: &Table, depth: usize) -> Option<Result<Value, String>> {
        node_copy(self.shared, self.state(), self.script_id, t, depth)
    }

    /// `storage_get(script, path)`: a scalar's value; `nil, true` for a
    /// table (the prelude makes a view of it); nil when absent.
    pub fn storage_get(
        &self,
        lua: &Lua,
        script: &LuaValue,
        path: &LuaValue,
    ) -> mlua::Result<MultiValue> {
        let depth = match path {
            LuaValue::Table(t) => i64::try_from(t.raw_len()).unwrap_or(i64::MAX),
            _ => 0,
        };
        self.charge_storage(READ_CHARGE.saturating_add(depth))?;
        match self.storage_node(script, path) {
            Some(Value::Object(_)) | Some(Value::Array(_)) => Ok(MultiValue::from_iter([
                LuaValue::Nil,
                LuaValue::Boolean(true),
            ])),
            Some(v) => ret(to_lua(lua, v)?),
            None => ret(LuaValue::Nil),
        }
    }

    /// `storage_get_key(script, key, parent)`: [`Call::storage_get`] of a
    /// top-level key (`storage.turn`), or with `parent` (a top-level key)
    /// of a key of that table (`storage.board.cell_5`,
    /// `storage.hand[2]`): the common reads, without a path table or an
    /// owned copy of the keys.
    pub fn storage_get_key(
        &self,
        lua: &Lua,
        script: &LuaValue,
        key: &LuaValue,
        parent: &LuaValue,
    ) -> mlua::Result<(LuaValue, Option<bool>)> {
        self.charge_storage(READ_CHARGE)?;
        fn entry<'v>(v: &'v Value, key: &LuaValue) -> Option<&'v Value> {
            match key {
                LuaValue::String(k) => entry_at(v, Key::Str(&k.as_bytes())),
                LuaValue::Integer(i) => entry_at(v, Key::Int(*i)),
                _ => None,
            }
        }
        let found = match script {
            LuaValue::String(s) => {
                let root = std::str::from_utf8(&s.as_bytes())
                    .ok()
                    .and_then(|s| self.state().storage().get(s));
                match parent {
                    LuaValue::Nil => root.and_then(|r| entry(r, key)),
                    p => root.and_then(|r| entry(r, p)).and_then(|t| entry(t, key)),
                }
            }
            _ => None,
        };
        // Two values, never a list of them: nothing to allocate.
        Ok(match found {
            Some(Value::Object(_)) | Some(Value::Array(_)) => (LuaValue::Nil, Some(true)),
            // A short string (a seat, a phase, a name) comes from the
            // string cache: no allocation.
            Some(Value::String(s)) if s.len() <= 64 => {
                (LuaValue::String(self.shared.string(lua, s)?), None)
            }
            Some(v) => (to_lua(lua, v)?, None),
            None => (LuaValue::Nil, None),
        })
    }

    /// The read of the raw `__index` of a `storage` node (`raw.rs`): what
    /// [`Call::storage_get_key`] answers for a string or integer key,
    /// copied out of the state (a string as a pointer into it: nothing
    /// changes the state before it is pushed). `Err` once the budget is
    /// spent.
    ///
    /// Charged as that native is, except the reads a node's read cache may
    /// keep ([`cacheable`]): the cache answers those with no call at all
    /// when it has them, so they cost their instruction only, cached or
    /// not.
    pub(crate) fn storage_read(
        &self,
        script: &[u8],
        key: Key<'_>,
        parent: Option<&[u8]>,
    ) -> Result<Found, ()> {
        let found = self.storage_lookup(script, key, parent);
        if !cacheable(key, parent, found) {
            self.charge_storage(READ_CHARGE).map_err(|_| ())?;
        }
        Ok(found)
    }

    /// What a `storage` node's key holds (see [`Call::storage_read`]).
    fn storage_lookup(&self, script: &[u8], key: Key<'_>, parent: Option<&[u8]>) -> Found {
        let root = std::str::from_utf8(script)
            .ok()
            .and_then(|s| self.state().storage().get(s));
        let found = match parent {
            None => root.and_then(|r| entry_at(r, key)),
            Some(p) => root
                .and_then(|r| entry_at(r, Key::Str(p)))
                .and_then(|t| entry_at(t, key)),
        };
        match found {
            None | Some(Value::Null) => Found::Nil,
            Some(Value::Bool(b)) => Found::Bool(*b),
            Some(Value::Number(n)) => match crate::convert::number(*n) {
                LuaValue::Integer(i) => Found::Int(i),
                _ => Found::Num(*n),
            },
            Some(Value::String(s)) => Found::Str(s.as_ptr(), s.len()),
            Some(Value::Object(_)) | Some(Value::Array(_)) => Found::Table,
        }
    }

    /// `storage_set(script, path, value)`: `true`, or `false, message,
    /// kind`. Only the running script's own storage, in handlers only.
    ///
    /// `path` is a path table, or — the common writes, without a path
    /// table — a key: of the top level, or of the table at top-level key
    /// `parent` when that is given.
    pub fn storage_set(
        &mut self,
        lua: &Lua,
        script: &LuaValue,
        (path, parent): (&LuaValue, &LuaValue),
        value: &LuaValue,
    ) -> mlua::Result<MultiValue> {
        self.charge_storage(WRITE_CHARGE)?;
        let script = text(script).unwrap_or_default();
        let path = || match (path, parent) {
            (LuaValue::Table(_), _) => path_of(path),
            (key, LuaValue::Nil) => step_of(key).map(|k| vec![k]),
            (key, parent) => step_of(parent).and_then(|p| Ok(vec![p, step_of(key)?])),
        };
        let value = |call: &Self, bytes_max: usize| match value {
            LuaValue::Nil => Ok(None),
            v => call
                .convert(crate::convert::VALUES_MAX, bytes_max, || {
                    to_value_with(v, &|t, d| call.storage_of(t, d))
                })
                .map(Some),
        };
        match self.write_checked(&script, path, value) {
            Ok(()) => ok_true(),
            Err((msg, kind)) => refusal(lua, &msg, kind),
        }
    }

    /// The raw `__newindex` of a `storage` node (`raw.rs`): what
    /// [`Call::storage_set`] does with a key and a scalar that
    /// [`plain_write`] accepts, charged the same; a refusal's message is
    /// kept in [`Shared`](crate::shared::Shared) for the caller to raise
    /// with its kind.
    pub(crate) fn storage_write(
        &mut self,
        script: &[u8],
        key: Key<'_>,
        parent: Option<&[u8]>,
        value: Scalar<'_>,
    ) -> Wrote {
        // Counted and charged as the native it replaces (`storage_set`:
        // its call, its write, the one value it converts), so a write costs
        // the same whichever path takes it.
        self.shared.note_native();
        // Text is charged by its bytes too, as a conversion charges it.
        let text = match (&key, &value) {
            (Key::Str(k), Scalar::Str(v)) => k.len().saturating_add(v.len()),
            (Key::Str(k), _) => k.len(),
            (_, Scalar::Str(v)) => v.len(),
            _ => 0,
        };
        let cost = (WRITE_CHARGE
            + crate::errors::NATIVE_CALL_COST
            + i64::try_from(crate::convert::CONVERT_COST).unwrap_or(i64::MAX))
        .saturating_add(i64::try_from(crate::convert::text_cost(text)).unwrap_or(i64::MAX));
        if self.charge_storage(cost).is_err() {
            return Wrote::Budget;
        }
        let script = String::from_utf8_lossy(script);
        let path = || {
            let mut p = Vec::with_capacity(2);
            if let Some(parent) = parent {
                p.push(Step::Key(String::from_utf8_lossy(parent).into_owned()));
            }
            p.push(match key {
                Key::Str(k) => Step::Key(String::from_utf8_lossy(k).into_owned()),
                Key::Int(i) => Step::Index(usize::try_from(i - 1).unwrap_or(usize::MAX)),
            });
            Ok(p)
        };
        let value = |_: &Self, _: usize| scalar_value(value).map_err(|m| (m, "runtime"));
        match self.write_checked(&script, path, value) {
            Ok(()) => Wrote::Done,
            Err((msg, kind)) => {
                let (p, n) = self.shared.keep_refusal(msg);
                Wrote::Refused(kind, p, n)
            }
        }
    }

    /// A write after its charge: refused outside handlers and for another
    /// script's storage, then `path` and `value` made (a message when they
    /// cannot be), the depth and size limits checked, and the value set.
    /// `Err` is (message, kind).
    fn write_checked(
        &mut self,
        script: &str,
        path: impl FnOnce() -> Result<Vec<Step>, String>,
        value: impl FnOnce(&Self, usize) -> crate::access::ConvertResult<Option<Value>>,
    ) -> Result<(), (String, &'static str)> {
        if let Some(refused) = self.write_refusal("write storage") {
            return Err(refused);
        }
        if *script != **self.script_id {
            return Err(("a script may only write its own storage".into(), "sandbox"));
        }
        let runtime = |m: String| (m, "runtime");
        let path = path().map_err(runtime)?;
        // The value may hold what the byte budget has left, plus what it
        // replaces. Walking what it replaces is charged first, refused or
        // not: a script could otherwise make every refused write walk a
        // big table for the price of a call.
        let (replaced, old) = match self
            .state()
            .storage()
            .get(script)
            .and_then(|r| walk(r, &path))
        {
            Some(prev) => {
                let mut n = 0u64;
                count_values(prev, &mut n, u64::MAX);
                (crate::convert::bytes_of_value(prev), n)
            }
            None => (0, 0),
        };
        if !self.shared.charge_copy(old.saturating_mul(WALK_COST)) {
            return Err((crate::errors::BUDGET_MSG.to_owned(), "budget"));
        }
        let bytes_max = self.bytes_left().saturating_add(replaced);
        let value = value(self, bytes_max)
            .map_err(|(m, kind)| (format!("storage cannot hold this value: {m}"), kind))?;
        let depth = path.len() + value.as_ref().map_or(0, value_depth);
        if depth > DEPTH_MAX {
            return Err(runtime(format!(
                "storage cannot nest deeper than {DEPTH_MAX} levels (this write would reach {depth})"
            )));
        }
        let Access::Handler(ctx) = &mut self.access else {
            return Ok(());
        };
        // The read caches were right before this write (its key's
        // entry is already gone): they stay right after it.
        let seen = &self.shared.storage_seen;
        let caches_right = seen.get() == ctx.state().storage_stamp();
        // Both limits are checked before the root is touched: a refused
        // write (which a script may catch) leaves the storage exactly as it
        // was, an absent root absent.
        let empty = Value::Object(BTreeMap::new());
        let current = ctx.state().storage().get(script).unwrap_or(&empty);
        // A script's storage holds at most STORAGE_VALUES_MAX values: the
        // count is taken once per transaction (when the root is first
        // touched, as it is copied) and kept up to date by each write.
        let used = self.shared.storage_values(script, || {
            let mut n = 0u64;
            count_values(current, &mut n, u64::MAX);
            n
        });
        let mut new = 0u64;
        if let Some(v) = &value {
            count_values(v, &mut new, u64::MAX);
        }
        let after = (used + new).saturating_sub(old);
        if new > old && after > STORAGE_VALUES_MAX {
            return Err(runtime(format!("storage is full: a script's storage holds at most {STORAGE_VALUES_MAX} values (this write would make {after})")));
        }
        let (grown, shrunk) = write_bytes(current, &path, value.as_ref());
        if let Err(m) = ctx.storage_fits(grown, shrunk) {
            return Err((m, "memory"));
        }
        // Changed in place: the transaction keeps one copy of the root for
        // rollback, not one per write.
        let root = ctx.storage_root_mut(script);
        let result = set_path(root, &path, value);
        if result.is_ok() {
            self.shared.set_storage_values(script, after);
            ctx.storage_resized(grown, shrunk);
        }
        let root = ctx.storage_root_mut(script);
        if matches!(&*root, Value::Object(o) if o.is_empty()) {
            ctx.set_storage(script, None);
        }
        if caches_right {
            seen.set(ctx.state().storage_stamp());
        }
        result.map_err(runtime)
    }

    /// `storage_len(script, path)`: the length of a list (0 otherwise).
    pub fn storage_len(&self, script: &LuaValue, path: &LuaValue) -> mlua::Result<i64> {
        self.charge_storage(LEN_CHARGE)?;
        Ok(match self.storage_node(script, path) {
            Some(Value::Array(a)) => i64::try_from(a.len()).unwrap_or(i64::MAX),
            _ => 0,
        })
    }

    /// `storage_keys(script, path)`: a list's indexes or an object's keys,
    /// in order.
    pub fn storage_keys(
        &self,
        lua: &Lua,
        script: &LuaValue,
        path: &LuaValue,
    ) -> mlua::Result<LuaValue> {
        let node = self.storage_node(script, path);
        let keys = match node {
            Some(Value::Array(a)) => a.len(),
            Some(Value::Object(o)) => o.len(),
            _ => 0,
        };
        let per_key = i64::try_from(keys)
            .unwrap_or(i64::MAX)
            .saturating_mul(KEY_CHARGE);
        self.charge_storage(LEN_CHARGE.saturating_add(per_key))?;
        let t = lua.create_table()?;
        match node {
            Some(Value::Array(a)) => {
                for i in 0..a.len() {
                    t.raw_set(i + 1, i + 1)?;
                }
            }
            Some(Value::Object(o)) => {
                for (i, k) in o.keys().enumerate() {
                    t.raw_set(i + 1, k.as_str())?;
                }
            }
            _ => {}
        }
        Ok(LuaValue::Table(t))
    }
}

/// What a write of `value` (`None`: a removal) at `path` in `root` adds
/// to and frees from the room's held bytes (digipology_kernel::bytes): the
/// value and, for a new key of an object, the key. (0, 0) for a write that
/// `set_path` refuses.
fn write_bytes(root: &Value, path: &[Step], value: Option<&Value>) -> (u64, u64) {
    use digipology_kernel::bytes::value_bytes;
    let Some((last, parents)) = path.split_last() else {
        return (0, 0);
    };
    let Some(parent) = walk(root, parents) else {
        return (0, 0);
    };
    let key_bytes = |k: &str| u64::try_from(k.len()).unwrap_or(u64::MAX);
    let old = match (parent, last) {
        (Value::Object(o), Step::Key(k)) => o.get(k).map(|v| (v, key_bytes(k))),
        (Value::Array(a), Step::Index(i)) => a.get(*i).map(|v| (v, 0)),
        // An empty table that becomes a list with its first item.
        (Value::Object(o), Step::Index(0)) if o.is_empty() => None,
        _ => return (0, 0),
    };
    let new_key = match last {
        Step::Key(k) => key_bytes(k),
        Step::Index(_) => 0,
    };
    match (old, value) {
        (None, Some(v)) => (new_key.saturating_add(value_bytes(v)), 0),
        (Some((o, _)), Some(v)) => (value_bytes(v), value_bytes(o)),
        (Some((o, k)), None) => (0, k.saturating_add(value_bytes(o))),
        (None, None) => (0, 0),
    }
}

/// How deeply a value nests (a scalar is 0, `{}` and `[]` are 1).
fn value_depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(value_depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(value_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Most values one script's storage may hold (every number, string,
/// boolean, list and table counts one).
pub const STORAGE_VALUES_MAX: u64 = 1_000_000;

/// The canonical contents a `storage` node stands for, copied out of
/// `state` for the script `script_id` (see [`Call::storage_of`]): `None`
/// for a table that is no storage node; an error for another script's
/// node, a copy nested too deep, or one the budget cannot pay for.
pub(crate) fn node_copy(
    shared: &crate::shared::Shared,
    state: &digipology_kernel::State,
    script_id: &str,
    t: &Table,
    depth: usize,
) -> Option<Result<Value, String>> {
    let mt = t.metatable()?;
    let script = match mt.raw_get::<LuaValue>("__storage").ok()? {
        LuaValue::String(s) => s.to_string_lossy(),
        _ => return None,
    };
    if *script != *script_id {
        return Some(Err("a script may only read its own storage".into()));
    }
    let path = match path_of(&mt.raw_get::<LuaValue>("__path").ok()?) {
        Ok(p) => p,
        Err(m) => return Some(Err(m)),
    };
    let empty = Value::Object(BTreeMap::new());
    let found = state
        .storage()
        .get(&script)
        .and_then(|root| walk(root, &path))
        .unwrap_or(&empty);
    let budget = u64::try_from(shared.remaining()).unwrap_or(0) / COPY_COST;
    let mut nodes = 0u64;
    if let Err(m) = measure(found, depth, &mut nodes, budget) {
        if nodes > budget {
            // Marks the budget exhausted: the error is a `budget` one.
            let _ = shared.charge_copy(u64::MAX);
        }
        return Some(Err(m));
    }
    if !shared.charge_copy(nodes.saturating_mul(COPY_COST)) {
        return Some(Err("the instruction budget ran out copying storage".into()));
    }
    Some(Ok(found.clone()))
}

/// Instructions charged for each value copied out of storage.
const COPY_COST: u64 = 100;

/// Instructions charged per value a write replaces (walked to measure
/// it before the new value is made).
const WALK_COST: u64 = 2;

/// Counts the values in `v` (into `nodes`) and checks its nesting fits
/// under [`DEPTH_MAX`] from `depth`; stops as soon as `nodes` passes
/// `budget`, so measuring never costs more than the copy would.
fn measure(v: &Value, depth: usize, nodes: &mut u64, budget: u64) -> Result<(), String> {
    if depth >= DEPTH_MAX {
        return Err(format!(
            "tables nested deeper than {DEPTH_MAX} levels (or a cycle)"
        ));
    }
    *nodes += 1;
    if *nodes > budget {
        return Err("the instruction budget ran out copying storage".into());
    }
    match v {
        Value::Array(a) => a
            .iter()
            .try_for_each(|x| measure(x, depth + 1, nodes, budget)),
        Value::Object(o) => o
            .values()
            .try_for_each(|x| measure(x, depth + 1, nodes, budget)),
        _ => Ok(()),
    }
}

/// A storage path element.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn path_of(v: &LuaValue) -> Result<Vec<Step>, String> {
    let LuaValue::Table(t) = v else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for i in 1..=t.raw_len() {
        out.push(step_of(
            &t.raw_get::<LuaValue>(i).map_err(|e| e.to_string())?,
        )?);
    }
    Ok(out)
}

/// One key of a storage path.
fn step_of(v: &LuaValue) -> Result<Step, String> {
    match v {
        LuaValue::String(s) => Ok(Step::Key(
            s.to_str()
                .map_err(|_| "storage keys must be valid UTF-8 text".to_owned())?
                .to_string(),
        )),
        LuaValue::Integer(n) if *n >= 1 => {
            Ok(Step::Index(usize::try_from(n - 1).unwrap_or(usize::MAX)))
        }
        _ => Err("storage keys must be strings or positive integers".into()),
    }
}

fn walk<'v>(mut v: &'v Value, path: &[Step]) -> Option<&'v Value> {
    for step in path {
        v = match (v, step) {
            (Value::Object(o), Step::Key(k)) => o.get(k)?,
            (Value::Array(a), Step::Index(i)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Sets (or with `None`, removes) the value at `path`.
fn set_path(root: &mut Value, path: &[Step], value: Option<Value>) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else {
        return Err("cannot replace storage itself; set a key".into());
    };
    let mut node = root;
    for step in parents {
        node = match (node, step) {
            (Value::Object(o), Step::Key(k)) => o
                .get_mut(k)
                .ok_or_else(|| format!("storage has no '{k}'"))?,
            (Value::Array(a), Step::Index(i)) => a
                .get_mut(*i)
                .ok_or_else(|| format!("storage has no index {}", i + 1))?,
            _ => return Err("that storage path does not lead to a table".into()),
        };
    }
    // An empty table becomes a list when its first item is set (and only
    // then: a failing write changes nothing).
    if let (Value::Object(o), Step::Index(0), Some(_)) = (&*node, last, &value) {
        if o.is_empty() {
            *node = Value::Array(Vec::new());
        }
    }
    match (node, last, value) {
        (Value::Object(o), Step::Key(k), Some(v)) => {
            o.insert(k.clone(), v);
        }
        (Value::Object(o), Step::Key(k), None) => {
            o.remove(k);
        }
        (Value::Array(a), Step::Index(i), Some(v)) if *i < a.len() => a[*i] = v,
        (Value::Array(a), Step::Index(i), Some(v)) if *i == a.len() => a.push(v),
        (Value::Array(a), Step::Index(i), None) if *i + 1 == a.len() => {
            a.pop();
        }
        (Value::Array(a), Step::Index(i), None) if *i >= a.len() => {}
        (Value::Array(_), Step::Index(_), _) => {
            return Err("storage arrays cannot have holes: set index n+1 to append, nil the last index to remove".into())
        }
        (Value::Array(_), Step::Key(k), _) => {
            return Err(format!("this storage table is an array; it cannot take the string key '{k}'"))
        }
        (Value::Object(_), Step::Index(_), _) => {
            return Err("this storage table has string keys; it cannot take an integer key".into())
        }
        _ => return Err("that storage path does not lead to a table".into()),
    }
    Ok(())
}
