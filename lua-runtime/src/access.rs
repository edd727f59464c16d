//! The native kernel access a callback gets: reads of the state as the
//! transaction sees it, and — in event handlers only — subcommands, storage
//! writes and canonical randomness.

use std::collections::BTreeMap;

use digipology_kernel::state::{entity_value, Entity, EntityKey, Placement};
use digipology_kernel::{
    ActionType, FieldValue, Fields, Id, ScriptCtx, ScriptErrorKind, State, Value,
};
use mlua::{Lua, MultiValue, Table, Value as LuaValue};
use slotmap::{Key, KeyData};

use crate::convert::{number, to_json_with, to_lua, to_value_with, Resolve, DEPTH_MAX};
use crate::shared::Shared;

/// The storage entry the runtime keeps its own records in (prompt
/// callbacks, timer data). Scripts write only their own storage, and
/// script ids may not start with `@`.
pub const RUNTIME_STORAGE: &str = "@runtime";

/// What a callback may do.
pub enum Access<'a, 'b, 'c> {
    /// A guard: read-only.
    Guard(&'a State),
    /// A script's top-level chunk while the room loads: read-only.
    Load(&'a State),
    /// An event handler: reads and writes through the transaction.
    Handler(&'a mut ScriptCtx<'b, 'c>),
}

/// Context of one callback.
pub struct Call<'a, 'b, 'c> {
    /// What it may do.
    pub access: Access<'a, 'b, 'c>,
    /// The script (for storage and subcommand sources).
    pub script_id: &'a Id,
    /// The binding (subcommand source).
    pub binding_id: &'a Id,
    /// Sequence of the running transaction.
    pub seq: u64,
    /// Shared flags.
    pub shared: &'a Shared,
}

fn key_to_lua(k: EntityKey) -> LuaValue {
    LuaValue::Integer(k.data().as_ffi() as i64)
}

fn arg(args: &MultiValue, i: usize) -> LuaValue {
    args.get(i).cloned().unwrap_or(LuaValue::Nil)
}

fn arg_str(args: &MultiValue, i: usize) -> Option<String> {
    match args.get(i) {
        Some(LuaValue::String(s)) => s.to_str().ok().map(|s| s.to_string()),
        _ => None,
    }
}

fn list(lua: &Lua, items: impl IntoIterator<Item = String>) -> mlua::Result<LuaValue> {
    let t = lua.create_table()?;
    for (i, s) in items.into_iter().enumerate() {
        t.raw_set(i + 1, s)?;
    }
    Ok(LuaValue::Table(t))
}

fn ret(v: LuaValue) -> mlua::Result<MultiValue> {
    Ok(MultiValue::from_iter([v]))
}

fn refusal(lua: &Lua, msg: &str, kind: &str) -> mlua::Result<MultiValue> {
    Ok(MultiValue::from_iter([
        LuaValue::Boolean(false),
        LuaValue::String(lua.create_string(msg)?),
        LuaValue::String(lua.create_string(kind)?),
    ]))
}

fn ok_true() -> mlua::Result<MultiValue> {
    ret(LuaValue::Boolean(true))
}

impl Call<'_, '_, '_> {
    fn state(&self) -> &State {
        match &self.access {
            Access::Guard(s) | Access::Load(s) => s,
            Access::Handler(ctx) => ctx.state(),
        }
    }

    /// Why a write is refused here, as (message, kind), or `None` when
    /// writes are allowed.
    fn write_refusal(&self, what: &str) -> Option<(String, &'static str)> {
        match self.access {
            Access::Handler(_) => None,
            Access::Guard(_) => {
                self.shared.fail(ScriptErrorKind::GuardMutation);
                Some((
                    format!(
                        "guards are read-only: a guard cannot {what} (do it in an event handler)"
                    ),
                    "guard_mutation",
                ))
            }
            Access::Load(_) => {
                self.shared.fail(ScriptErrorKind::Sandbox);
                Some((
                    format!("a script cannot {what} while the room loads (do it in on_start)"),
                    "sandbox",
                ))
            }
        }
    }

    /// Runs one native operation: `op` is the first argument.
    pub fn op(&mut self, lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
        let op_name = match args.front() {
            Some(LuaValue::String(s)) => s.clone(),
            _ => return Err(mlua::Error::runtime("native operation name missing")),
        };
        let op_bytes = op_name.as_bytes();
        let op = std::str::from_utf8(&op_bytes).unwrap_or("");
        match op {
            "lookup" => {
                let id = arg_str(&args, 1).unwrap_or_default();
                ret(self.state().key(&id).map_or(LuaValue::Nil, key_to_lua))
            }
            "readlive" => self.read_live(lua, &args),
            "entities" => {
                let tag = arg_str(&args, 1);
                let ids = self
                    .state()
                    .entities_sorted()
                    .into_iter()
                    .filter(|e| tag.as_ref().is_none_or(|t| e.tags.binary_search(t).is_ok()))
                    .map(|e| e.id.to_string());
                ret(list(lua, ids)?)
            }
            "player" => {
                let id = arg_str(&args, 1).unwrap_or_default();
                match self.state().players.get_key_value(id.as_str()) {
                    Some((pid, p)) => ret(player_table(lua, pid, p.name.as_deref())?),
                    None => ret(LuaValue::Nil),
                }
            }
            "players" => {
                let t = lua.create_table()?;
                for (i, (pid, p)) in self.state().players.iter().enumerate() {
                    t.raw_set(i + 1, player_table(lua, pid, p.name.as_deref())?)?;
                }
                ret(LuaValue::Table(t))
            }
            "seats" => {
                // A list in seat order: {id = seat, player = id or nil}.
                let t = lua.create_table()?;
                for (i, (seat, occupant)) in self.state().seats_in_order().into_iter().enumerate() {
                    let s = lua.create_table()?;
                    s.raw_set("id", &**seat)?;
                    if let Some(p) = occupant {
                        s.raw_set("player", &**p)?;
                    }
                    t.raw_set(i + 1, s)?;
                }
                ret(LuaValue::Table(t))
            }
            "actor" => match &self.access {
                Access::Handler(ctx) => match ctx.actor() {
                    Some(p) => ret(LuaValue::String(lua.create_string(&**p)?)),
                    None => ret(LuaValue::Nil),
                },
                _ => ret(LuaValue::Nil),
            },
            "settings" => ret(to_lua(lua, &Value::Object(self.state().settings.clone()))?),
            "sequence" => ret(LuaValue::Integer(self.seq as i64)),
            "action_id" => match &self.access {
                Access::Handler(ctx) => ret(LuaValue::String(
                    lua.create_string(ctx.action_id().to_string())?,
                )),
                _ => ret(LuaValue::Nil),
            },
            "stack" => {
                let id = arg_str(&args, 1).unwrap_or_default();
                match self.state().stacks.get(id.as_str()) {
                    Some(s) => ret(list(lua, s.items.iter().map(|i| i.to_string()))?),
                    None => ret(LuaValue::Nil),
                }
            }
            "storage_get" => self.storage_get(lua, &args),
            "storage_len" => {
                let node = self.storage_node(&args);
                let n = match node {
                    Some(Value::Array(a)) => a.len(),
                    _ => 0,
                };
                ret(LuaValue::Integer(n as i64))
            }
            "storage_keys" => {
                let t = lua.create_table()?;
                match self.storage_node(&args) {
                    Some(Value::Array(a)) => {
                        for i in 0..a.len() {
                            t.raw_set(i + 1, (i + 1) as i64)?;
                        }
                    }
                    Some(Value::Object(o)) => {
                        for (i, k) in o.keys().enumerate() {
                            t.raw_set(i + 1, k.as_str())?;
                        }
                    }
                    _ => {}
                }
                ret(LuaValue::Table(t))
            }
            "storage_set" => self.storage_set(lua, &args),
            "next_id" => {
                // Deterministic ids: prefix, the action's sequence, and a
                // counter that restarts with every transaction.
                let prefix = arg_str(&args, 1).unwrap_or_else(|| "id".into());
                let n = self.shared.next_id();
                ret(LuaValue::String(
                    lua.create_string(format!("{prefix}_{}_{n}", self.seq))?,
                ))
            }
            "runtime_set" => self.runtime_set(lua, &args),
            "submit" => self.submit(lua, &args),
            "random_below" | "random_float" => {
                if let Some((msg, kind)) = self.write_refusal("draw random numbers") {
                    return refusal(lua, &msg, kind);
                }
                let Access::Handler(ctx) = &mut self.access else {
                    return ret(LuaValue::Nil);
                };
                if op == "random_float" {
                    let bits = ctx.random_u64() >> 11;
                    return ret(LuaValue::Number(bits as f64 / (1u64 << 53) as f64));
                }
                let n = match arg(&args, 1) {
                    LuaValue::Integer(n) if n > 0 => n as u64,
                    LuaValue::Number(n) if n >= 1.0 && n.fract() == 0.0 && n < 9.0e15 => n as u64,
                    _ => {
                        return refusal(
                            lua,
                            "random: the interval is empty or too large",
                            "runtime",
                        )
                    }
                };
                ret(LuaValue::Integer(ctx.random_below(n) as i64))
            }
            _ => Err(mlua::Error::runtime(format!(
                "unknown native operation '{op}'"
            ))),
        }
    }

    /// The entity behind a handle, if it is still there.
    fn by_key(&self, key: i64) -> Option<&Entity> {
        self.state()
            .get(EntityKey::from(KeyData::from_ffi(key as u64)))
    }

    /// `read(key, code)`: `true, value` of field `READ_FIELDS[code]`, or
    /// `false` when the handle no longer names an entity. Reads follow the
    /// handle; writes also check the proxy's id (see `alive`).
    pub fn read_code(&self, lua: &Lua, key: i64, code: i64) -> mlua::Result<(bool, LuaValue)> {
        let Some(e) = self.by_key(key) else {
            return Ok((false, LuaValue::Nil));
        };
        let what = usize::try_from(code - 1)
            .ok()
            .and_then(|i| READ_FIELDS.get(i))
            .ok_or_else(|| mlua::Error::runtime("unknown entity field code"))?;
        Ok((true, self.field(lua, e, what)?))
    }

    /// The entity behind a handle if it is still there and — when `id` is
    /// a string — still has that id.
    fn live_entity(&self, key: i64, id: &LuaValue) -> Option<&Entity> {
        self.by_key(key).filter(|e| match id {
            LuaValue::String(id) => e.id.as_bytes() == &*id.as_bytes(),
            _ => true,
        })
    }

    /// Whether the handle still names the entity with this id.
    pub fn alive_key(&self, key: i64, id: &LuaValue) -> bool {
        self.live_entity(key, id).is_some()
    }

    /// The handle of the entity with this id.
    pub fn lookup_key(&self, id: &LuaValue) -> Option<i64> {
        let LuaValue::String(id) = id else {
            return None;
        };
        let id = id.to_str().ok()?;
        self.state().key(&id).map(|k| k.data().as_ffi() as i64)
    }

    /// `items(key)`: `true, n, id1, handle1, id2, handle2, …` for a
    /// container's `n` items in order (`n` = 0 for an entity that is not a
    /// container), or `false` when the handle no longer names an entity.
    /// The prelude builds the proxies: values pushed here need no Lua
    /// allocation (ids come from the string cache), tables would.
    pub fn item_handles(&self, lua: &Lua, key: i64) -> mlua::Result<MultiValue> {
        let Some(e) = self.by_key(key) else {
            return ret(LuaValue::Boolean(false));
        };
        let items = e
            .components
            .container
            .as_ref()
            .map_or(&[][..], |c| &c.items);
        let mut out = Vec::with_capacity(2 + 2 * items.len());
        out.push(LuaValue::Boolean(true));
        out.push(LuaValue::Integer(items.len() as i64));
        for id in items {
            out.push(LuaValue::String(self.shared.string(lua, id)?));
            out.push(self.state().key(id).map_or(LuaValue::Nil, key_to_lua));
        }
        Ok(MultiValue::from_vec(out))
    }

    /// `move_to(key, id, container_id, index)`: the entity into a container
    /// (at its end when `index` is nil) or, for a nil container, into the
    /// world — one `container.move` subcommand.
    /// Returns `true`; or `false, message, kind` (raised by the prelude);
    /// or `nil` when the handle no longer names the entity.
    pub fn move_to(
        &mut self,
        lua: &Lua,
        key: i64,
        id: &LuaValue,
        to: &LuaValue,
        index: &LuaValue,
    ) -> mlua::Result<MultiValue> {
        let Some(e) = self.live_entity(key, id) else {
            return ret(LuaValue::Nil);
        };
        let entity = e.id.clone();
        let from = match &e.placement {
            Placement::Container(c) => Some(c.clone()),
            _ => None,
        };
        let to = match to {
            LuaValue::String(s) => Some(s.to_str()?),
            _ => None,
        };
        let to = to.as_ref().map(|t| &t[..]);
        if index.is_nil() {
            // At the end (or, for the world, 0): the typed subcommand.
            return self.move_each(lua, &[entity], from.as_deref(), to);
        }
        let index = match field_value(index, &|_, _| None) {
            Ok(v) => v,
            Err(m) => {
                return refusal(
                    lua,
                    &format!("container.move: bad payload field index: {m}"),
                    "runtime",
                )
            }
        };
        if let Some((msg, kind)) = self.write_refusal("issue container.move") {
            return refusal(lua, &msg, kind);
        }
        let payload = Fields::new()
            .with("entity", &*entity)
            .with("from", from.as_deref())
            .with("to", to)
            .with("index", index);
        self.submit_fields(lua, ActionType::ContainerMove, payload)
    }

    /// `move_all(key, id, container_id)`: every item of this container, in
    /// order, to the end of another container (or, for nil, the world) —
    /// one `container.move` subcommand per item, exactly what the loop
    /// `for _, c in ipairs(e:items()) do c:move_to(container) end` issues.
    /// Stops at the first rejection. Returns as [`Call::move_to`].
    pub fn move_all(
        &mut self,
        lua: &Lua,
        key: i64,
        id: &LuaValue,
        to: &LuaValue,
    ) -> mlua::Result<MultiValue> {
        let Some(e) = self.live_entity(key, id) else {
            return ret(LuaValue::Nil);
        };
        let from = e.id.clone();
        let items: Vec<Id> = e
            .components
            .container
            .as_ref()
            .map(|c| c.items.clone())
            .unwrap_or_default();
        let to = match to {
            LuaValue::String(s) => Some(s.to_str()?),
            _ => None,
        };
        self.move_each(lua, &items, Some(&from), to.as_ref().map(|t| &t[..]))
    }

    /// One typed `container.move` per item, in order, from `from` to the
    /// end of `to` (or the world). `true`, or the first rejection.
    fn move_each(
        &mut self,
        lua: &Lua,
        items: &[Id],
        from: Option<&str>,
        to: Option<&str>,
    ) -> mlua::Result<MultiValue> {
        if let Some((msg, kind)) = self.write_refusal("issue container.move") {
            return refusal(lua, &msg, kind);
        }
        let (script_id, binding_id) = (self.script_id, self.binding_id);
        let Access::Handler(ctx) = &mut self.access else {
            return ok_true();
        };
        for item in items {
            let count = to
                .and_then(|t| ctx.state().entity(t))
                .and_then(|c| c.components.container.as_ref())
                .map_or(0, |c| c.items.len());
            // Moving within one container: the item itself no longer counts.
            let index = if from.is_some() && from == to {
                count.saturating_sub(1)
            } else {
                count
            };
            let result = ctx.move_item(script_id, binding_id, item, from, to, index as u64);
            if result.is_err() {
                return self.submitted(lua, "container.move", 0, result);
            }
        }
        ok_true()
    }

    /// `submit(type, k1, v1, …)` without the operation name.
    pub fn submit_args(&mut self, lua: &Lua, args: &MultiValue) -> mlua::Result<MultiValue> {
        self.submit_from(lua, args, 0)
    }

    /// The entity a handle (`args[1]`) names, if it is still there and —
    /// when an id string is given (`args[2]`) — still has that id.
    fn live(&self, args: &MultiValue) -> Option<&Entity> {
        match arg(args, 1) {
            LuaValue::Integer(key) => self.live_entity(key, &arg(args, 2)),
            _ => None,
        }
    }

    /// `readlive(key, id, what)`: the handle check and the read in one
    /// crossing. Returns `false` when the handle no longer names the entity,
    /// else `true, value`.
    fn read_live(&self, lua: &Lua, args: &MultiValue) -> mlua::Result<MultiValue> {
        let Some(e) = self.live(args) else {
            return ret(LuaValue::Boolean(false));
        };
        let value = match args.get(3) {
            Some(LuaValue::String(w)) => self.field(lua, e, &w.to_str()?)?,
            _ => LuaValue::Nil,
        };
        Ok(MultiValue::from_vec(vec![LuaValue::Boolean(true), value]))
    }

    /// One readable field of an entity, as a Lua value.
    fn field(&self, lua: &Lua, e: &Entity, what: &str) -> mlua::Result<LuaValue> {
        let c = &e.components;
        let v = match what {
            "transform" => match &c.transform {
                Some(t) => to_lua(lua, &t.to_value())?,
                None => LuaValue::Nil,
            },
            "flipped" => c.flippable.map_or(LuaValue::Nil, LuaValue::Boolean),
            "locked" => c.lockable.map_or(LuaValue::Nil, LuaValue::Boolean),
            "value" => match (&c.counter, &c.die) {
                (Some(k), _) => number(k.value),
                (None, Some(d)) => to_lua(lua, &d.value)?,
                _ => LuaValue::Nil,
            },
            "faces" => match &c.die {
                Some(d) => to_lua(lua, &Value::Array(d.effective_faces()))?,
                None => LuaValue::Nil,
            },
            "text" => match &c.text {
                Some(t) => LuaValue::String(lua.create_string(t)?),
                None => LuaValue::Nil,
            },
            "tags" => list(lua, e.tags.iter().cloned())?,
            "props" => {
                let props = Value::Object(e.props.clone());
                self.charge_read(&props)?;
                to_lua(lua, &props)?
            }
            "heldBy" => match &e.held_by {
                Some(p) => LuaValue::String(lua.create_string(&**p)?),
                None => LuaValue::Nil,
            },
            "count" => match &c.container {
                Some(k) => LuaValue::Integer(k.items.len() as i64),
                None => LuaValue::Nil,
            },
            "items" => match &c.container {
                Some(k) => list(lua, k.items.iter().map(|i| i.to_string()))?,
                None => LuaValue::Nil,
            },
            "placement" => {
                let t = lua.create_table()?;
                let (kind, id) = match &e.placement {
                    Placement::World => ("world", None),
                    Placement::Container(i) => ("container", Some(i)),
                    Placement::Snap(i) => ("snap", Some(i)),
                    Placement::Stack(i) => ("stack", Some(i)),
                };
                t.raw_set("kind", kind)?;
                if let Some(i) = id {
                    t.raw_set("id", &**i)?;
                }
                LuaValue::Table(t)
            }
            other => {
                let full = entity_value(e);
                self.charge_read(&full)?;
                let comps = match &full {
                    Value::Object(o) => o.get("components").cloned(),
                    _ => None,
                };
                let comp = |name: &str| match &comps {
                    Some(Value::Object(c)) => c.get(name).cloned(),
                    _ => None,
                };
                if let Some(name) = other.strip_prefix("component:") {
                    match comp(name) {
                        Some(v) => to_lua(lua, &v)?,
                        None => LuaValue::Nil,
                    }
                } else if let Some(name) = other.strip_prefix("has:") {
                    LuaValue::Boolean(comp(name).is_some())
                } else {
                    return Err(mlua::Error::runtime(format!(
                        "unknown entity field '{other}'"
                    )));
                }
            }
        };
        Ok(v)
    }

    /// Charges a read that builds `v` in Lua, per value it holds; an error
    /// (the budget marked exhausted) when it does not fit.
    fn charge_read(&self, v: &Value) -> mlua::Result<()> {
        let budget = u64::try_from(self.shared.remaining()).unwrap_or(0) / READ_COST;
        let mut nodes = 0u64;
        let fits = count_values(v, &mut nodes, budget)
            && self.shared.charge_copy(nodes.saturating_mul(READ_COST));
        if fits {
            Ok(())
        } else {
            let _ = self.shared.charge_copy(u64::MAX);
            Err(mlua::Error::runtime("instruction budget exceeded"))
        }
    }

    /// The storage value at a path, borrowed (a read copies nothing).
    fn storage_node(&self, args: &MultiValue) -> Option<&Value> {
        let script = arg_str(args, 1)?;
        let path = path_of(&arg(args, 2)).ok()?;
        let root = self.state().storage.get(&script)?;
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
    fn storage_of(&self, t: &Table, depth: usize) -> Option<Result<Value, String>> {
        let mt = t.metatable()?;
        let script = match mt.raw_get::<LuaValue>("__storage").ok()? {
            LuaValue::String(s) => s.to_string_lossy(),
            _ => return None,
        };
        if script != **self.script_id {
            return Some(Err("a script may only read its own storage".into()));
        }
        let path = match path_of(&mt.raw_get::<LuaValue>("__path").ok()?) {
            Ok(p) => p,
            Err(m) => return Some(Err(m)),
        };
        let empty = Value::Object(BTreeMap::new());
        let found = self
            .state()
            .storage
            .get(&script)
            .and_then(|root| walk(root, &path))
            .unwrap_or(&empty);
        let budget = u64::try_from(self.shared.remaining()).unwrap_or(0) / COPY_COST;
        let mut nodes = 0u64;
        if let Err(m) = measure(found, depth, &mut nodes, budget) {
            if nodes > budget {
                // Marks the budget exhausted: the error is a `budget` one.
                let _ = self.shared.charge_copy(u64::MAX);
            }
            return Some(Err(m));
        }
        if !self.shared.charge_copy(nodes.saturating_mul(COPY_COST)) {
            return Some(Err("the instruction budget ran out copying storage".into()));
        }
        Some(Ok(found.clone()))
    }

    fn storage_get(&self, lua: &Lua, args: &MultiValue) -> mlua::Result<MultiValue> {
        match self.storage_node(args) {
            Some(Value::Object(_)) | Some(Value::Array(_)) => Ok(MultiValue::from_iter([
                LuaValue::Nil,
                LuaValue::Boolean(true),
            ])),
            Some(v) => ret(to_lua(lua, v)?),
            None => ret(LuaValue::Nil),
        }
    }

    fn storage_set(&mut self, lua: &Lua, args: &MultiValue) -> mlua::Result<MultiValue> {
        if let Some((msg, kind)) = self.write_refusal("write storage") {
            return refusal(lua, &msg, kind);
        }
        let script = arg_str(args, 1).unwrap_or_default();
        if script != **self.script_id {
            return refusal(lua, "a script may only write its own storage", "sandbox");
        }
        let path = match path_of(&arg(args, 2)) {
            Ok(p) => p,
            Err(m) => return refusal(lua, &m, "runtime"),
        };
        let value = match arg(args, 3) {
            LuaValue::Nil => None,
            v => match to_value_with(&v, &|t, d| self.storage_of(t, d)) {
                Ok(v) => Some(v),
                Err(m) => {
                    return refusal(
                        lua,
                        &format!("storage cannot hold this value: {m}"),
                        "runtime",
                    )
                }
            },
        };
        let depth = path.len() + value.as_ref().map_or(0, value_depth);
        if depth > DEPTH_MAX {
            return refusal(
                lua,
                &format!("storage cannot nest deeper than {DEPTH_MAX} levels (this write would reach {depth})"),
                "runtime",
            );
        }
        let Access::Handler(ctx) = &mut self.access else {
            return ok_true();
        };
        // Changed in place: the transaction keeps one copy of the root for
        // rollback, not one per write.
        let root = ctx.storage_root_mut(&script);
        // A script's storage holds at most STORAGE_VALUES_MAX values: the
        // count is taken once per transaction (when the root is first
        // touched, as it is copied) and kept up to date by each write.
        let used = self.shared.storage_values(&script, || {
            let mut n = 0u64;
            count_values(root, &mut n, u64::MAX);
            n
        });
        let mut old = 0u64;
        if let Some(prev) = walk(root, &path) {
            count_values(prev, &mut old, u64::MAX);
        }
        let mut new = 0u64;
        if let Some(v) = &value {
            count_values(v, &mut new, u64::MAX);
        }
        let after = (used + new).saturating_sub(old);
        if new > old && after > STORAGE_VALUES_MAX {
            return refusal(
                lua,
                &format!("storage is full: a script's storage holds at most {STORAGE_VALUES_MAX} values (this write would make {after})"),
                "runtime",
            );
        }
        let result = set_path(root, &path, value);
        if result.is_ok() {
            self.shared.set_storage_values(&script, after);
        }
        if matches!(&*root, Value::Object(o) if o.is_empty()) {
            ctx.set_storage(&script, None);
        }
        if let Err(m) = result {
            return refusal(lua, &m, "runtime");
        }
        ok_true()
    }

    /// Stores a prompt's callback or a timer's data in the runtime's own
    /// canonical storage (`storage["@runtime"]`).
    fn runtime_set(&mut self, lua: &Lua, args: &MultiValue) -> mlua::Result<MultiValue> {
        if let Some((msg, kind)) = self.write_refusal("create prompts or timers") {
            return refusal(lua, &msg, kind);
        }
        let kind = match arg_str(args, 1).as_deref() {
            Some("prompt") => "prompts",
            Some("timer") => "timers",
            _ => return refusal(lua, "unknown runtime record", "runtime"),
        };
        let id = arg_str(args, 2).unwrap_or_default();
        let record = match to_value_with(&arg(args, 3), &|t, d| self.storage_of(t, d)) {
            Ok(v) => v,
            Err(m) => return refusal(lua, &format!("cannot store this value: {m}"), "runtime"),
        };
        let Access::Handler(ctx) = &mut self.access else {
            return ok_true();
        };
        let mut root = match ctx.state().storage.get(RUNTIME_STORAGE) {
            Some(Value::Object(o)) => o.clone(),
            _ => BTreeMap::new(),
        };
        let section = root
            .entry(kind.to_owned())
            .or_insert_with(|| Value::Object(BTreeMap::new()));
        if let Value::Object(map) = section {
            map.insert(id, record);
        }
        ctx.set_storage(RUNTIME_STORAGE, Some(Value::Object(root)));
        ok_true()
    }

    fn submit(&mut self, lua: &Lua, args: &MultiValue) -> mlua::Result<MultiValue> {
        self.submit_from(lua, args, 1)
    }

    /// A subcommand from `args[first]` (its type) and the key, value pairs
    /// after it.
    fn submit_from(
        &mut self,
        lua: &Lua,
        args: &MultiValue,
        first: usize,
    ) -> mlua::Result<MultiValue> {
        let action_type = arg_str(args, first).unwrap_or_default();
        if let Some((msg, kind)) = self.write_refusal(&format!("issue {action_type}")) {
            return refusal(lua, &msg, kind);
        }
        let mut payload = Fields::new();
        let mut i = first + 1;
        while i < args.len() {
            let key = match args.get(i) {
                Some(LuaValue::String(k)) => k.to_string_lossy(),
                _ => {
                    return refusal(
                        lua,
                        &format!("{action_type}: payload keys must be strings"),
                        "runtime",
                    )
                }
            };
            match field_value(&arg(args, i + 1), &|t, d| self.storage_of(t, d)) {
                Ok(v) => payload.set(&key, v),
                Err(m) => {
                    return refusal(
                        lua,
                        &format!("{action_type}: bad payload field {key}: {m}"),
                        "runtime",
                    )
                }
            }
            i += 2;
        }
        match ActionType::from_name(&action_type) {
            Some(ty) => self.submit_fields(lua, ty, payload),
            None => self.submit_json(lua, &action_type, payload),
        }
    }

    /// An unregistered type: rejected by the kernel like any other, with
    /// its name in the report.
    fn submit_json(
        &mut self,
        lua: &Lua,
        action_type: &str,
        payload: Fields,
    ) -> mlua::Result<MultiValue> {
        let (script_id, binding_id) = (self.script_id, self.binding_id);
        let Access::Handler(ctx) = &mut self.access else {
            return ok_true();
        };
        let result = ctx.submit(script_id, binding_id, action_type, payload.to_json());
        self.submitted(lua, action_type, 0, result)
    }

    /// Issues a subcommand; `true` (and the id of an entity it produced),
    /// or `false, message, kind`. Callers check `write_refusal` first.
    fn submit_fields(
        &mut self,
        lua: &Lua,
        ty: ActionType,
        payload: Fields,
    ) -> mlua::Result<MultiValue> {
        let (script_id, binding_id) = (self.script_id, self.binding_id);
        let Access::Handler(ctx) = &mut self.access else {
            return ok_true();
        };
        let before = ctx.events().len();
        let result = ctx.submit_fields(script_id, binding_id, ty, payload);
        self.submitted(lua, ty.name(), before, result)
    }

    fn submitted(
        &mut self,
        lua: &Lua,
        action_type: &str,
        before: usize,
        result: Result<(), digipology_kernel::Rejection>,
    ) -> mlua::Result<MultiValue> {
        match result {
            Ok(()) => {
                let Access::Handler(ctx) = &self.access else {
                    return ok_true();
                };
                // A spawn or a draw to the world names the entity it produced.
                let made = ctx.events()[before..].iter().find_map(|e| match &e.kind {
                    digipology_kernel::EventKind::EntitySpawned { entity_id, .. } => {
                        Some(entity_id.to_string())
                    }
                    digipology_kernel::EventKind::DeckDrawn {
                        target: None,
                        entity_ids,
                        ..
                    } => entity_ids.first().map(|id| id.to_string()),
                    _ => None,
                });
                match made {
                    Some(id) => Ok(MultiValue::from_iter([
                        LuaValue::Boolean(true),
                        LuaValue::String(lua.create_string(&id)?),
                    ])),
                    None => ok_true(),
                }
            }
            Err(r) => {
                let msg = format!("{action_type} rejected: {r}");
                let (kind, name) = if r.code == digipology_kernel::RejectCode::CascadeLimit {
                    (ScriptErrorKind::Budget, "budget")
                } else {
                    (ScriptErrorKind::Subcommand, "subcommand")
                };
                self.shared.doom(&msg, kind);
                self.shared.fail(kind);
                refusal(lua, &msg, name)
            }
        }
    }
}

/// A Lua value as a payload value: scalars directly, tables through JSON
/// (same rules and errors as [`to_json_with`]).
fn field_value(v: &LuaValue, resolve: &Resolve<'_>) -> Result<FieldValue, String> {
    Ok(match v {
        LuaValue::Nil => FieldValue::Null,
        LuaValue::LightUserData(p) if p.0.is_null() => FieldValue::Null,
        LuaValue::Boolean(b) => FieldValue::Bool(*b),
        LuaValue::Integer(i) if i.unsigned_abs() <= 1 << 53 => FieldValue::Num(*i as f64),
        LuaValue::Integer(i) => {
            return Err(format!(
                "the integer {i} is beyond ±2^53, where numbers are exact"
            ))
        }
        LuaValue::Number(n) if n.is_finite() => FieldValue::Num(*n),
        LuaValue::String(s) => match s.to_str() {
            Ok(s) => FieldValue::from(&*s),
            Err(_) => return Err("strings must be valid UTF-8".into()),
        },
        other => match to_json_with(other, 0, resolve)? {
            serde_json::Value::String(s) => FieldValue::from(s.as_str()),
            json => FieldValue::Json(Box::new(json)),
        },
    })
}

fn player_table(lua: &Lua, id: &str, name: Option<&str>) -> mlua::Result<LuaValue> {
    let t = lua.create_table()?;
    t.raw_set("id", id)?;
    if let Some(n) = name {
        t.raw_set("name", n)?;
    }
    Ok(LuaValue::Table(t))
}

/// How deeply a value nests (a scalar is 0, `{}` and `[]` are 1).
fn value_depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(value_depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(value_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Entity fields `read(key, code)` serves, by code (1-based). The prelude
/// receives this list and builds its name → code table from it, so the two
/// sides cannot disagree.
pub const READ_FIELDS: &[&str] = &[
    "transform",
    "flipped",
    "locked",
    "value",
    "faces",
    "text",
    "tags",
    "props",
    "heldBy",
    "count",
    "items",
    "placement",
];

/// Most values one script's storage may hold (every number, string,
/// boolean, list and table counts one).
pub const STORAGE_VALUES_MAX: u64 = 1_000_000;

/// Counts the values in `v` into `nodes`; false as soon as they pass
/// `budget` (counting never costs more than the read would).
fn count_values(v: &Value, nodes: &mut u64, budget: u64) -> bool {
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

/// Instructions charged for each value a read builds (`e.props`,
/// `e:get(...)`): a read's cost grows with what it copies.
const READ_COST: u64 = 10;

/// Instructions charged for each value copied out of storage.
const COPY_COST: u64 = 100;

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
        match t.raw_get::<LuaValue>(i).map_err(|e| e.to_string())? {
            LuaValue::String(s) => out.push(Step::Key(
                s.to_str().map_err(|e| e.to_string())?.to_string(),
            )),
            LuaValue::Integer(n) if n >= 1 => out.push(Step::Index(n as usize - 1)),
            _ => return Err("storage keys must be strings or positive integers".into()),
        }
    }
    Ok(out)
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
