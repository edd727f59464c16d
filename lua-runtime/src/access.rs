//! The native kernel access a callback gets, and its reads: the state as
//! the transaction sees it (entities, players, seats, stacks, settings), ids
//! and canonical randomness. Storage (`storage.rs`), subcommands
//! (`submit.rs`) and the runtime's records (`records.rs`) add their methods
//! to [`Call`] in their own files; the typed natives (`native.rs`) call
//! them.

use digipology_kernel::state::{entity_value, Entity, EntityKey, Placement};
use digipology_kernel::{Id, ScriptCtx, ScriptErrorKind, State, Value};
use mlua::{Lua, MultiValue, Value as LuaValue};
use slotmap::{Key, KeyData};

use crate::convert::CONVERT_COST;
use crate::convert::{count_values, number, to_lua};
use crate::shared::Shared;

/// What a callback may do.
pub enum Access<'a, 'b, 'c> {
    /// A guard: read-only.
    Guard(&'a State),
    /// A script's top-level chunk while the room loads: read-only.
    Load(&'a State),
    /// An event handler: reads and writes through the transaction.
    Handler(&'a mut ScriptCtx<'b, 'c>),
    /// A sensing tool (docs/match.md): read-only, its randomness from the
    /// match's own sensing stream.
    Sense(&'a State, &'a mut digipology_kernel::rng::Rng),
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

/// An entity's generational handle as a Lua integer: the key's 64 bits,
/// reinterpreted (not converted), so [`key_from_handle`] gives it back.
#[inline]
pub(crate) fn handle_of(k: EntityKey) -> i64 {
    k.data().as_ffi().cast_signed()
}

/// The entity key a Lua handle stands for (the inverse of [`handle_of`]).
#[inline]
pub(crate) fn key_from_handle(handle: i64) -> EntityKey {
    EntityKey::from(KeyData::from_ffi(handle.cast_unsigned()))
}

/// A length or count as a Lua integer (saturating; no list comes near).
#[inline]
pub(crate) fn lua_len(n: usize) -> LuaValue {
    LuaValue::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

#[inline]
pub(crate) fn key_to_lua(k: EntityKey) -> LuaValue {
    LuaValue::Integer(handle_of(k))
}

/// A Lua string argument as text (`None` for anything else).
#[inline]
pub(crate) fn text(v: &LuaValue) -> Option<String> {
    match v {
        LuaValue::String(s) => s.to_str().ok().map(|s| s.to_string()),
        _ => None,
    }
}

pub(crate) fn list(lua: &Lua, items: impl IntoIterator<Item = String>) -> mlua::Result<LuaValue> {
    let t = lua.create_table()?;
    for (i, s) in items.into_iter().enumerate() {
        t.raw_set(i + 1, s)?;
    }
    Ok(LuaValue::Table(t))
}

#[inline]
pub(crate) fn ret(v: LuaValue) -> mlua::Result<MultiValue> {
    Ok(MultiValue::from_iter([v]))
}

pub(crate) fn refusal(lua: &Lua, msg: &str, kind: &str) -> mlua::Result<MultiValue> {
    Ok(MultiValue::from_iter([
        LuaValue::Boolean(false),
        LuaValue::String(lua.create_string(msg)?),
        LuaValue::String(lua.create_string(kind)?),
    ]))
}

#[inline]
pub(crate) fn ok_true() -> mlua::Result<MultiValue> {
    ret(LuaValue::Boolean(true))
}

/// The result of [`Call::convert`]: the value, or (message, kind).
pub(crate) type ConvertResult<T> = Result<T, (String, &'static str)>;

impl Call<'_, '_, '_> {
    /// Bytes a value handed to the host may hold now: what the room's byte
    /// budget has left (docs/lua-api.md, The byte budget).
    pub(crate) fn bytes_left(&mut self) -> usize {
        match &mut self.access {
            Access::Handler(ctx) => usize::try_from(ctx.bytes_left()).unwrap_or(usize::MAX),
            _ => usize::MAX,
        }
    }

    /// Runs one conversion of a Lua value for the host (`f`, over
    /// [`crate::convert`]'s functions), charged [`CONVERT_COST`] per value
    /// written and stopped where the budget could pay for no more, at
    /// `values_max` values or at `bytes_max` bytes. A failure is
    /// (message, kind): `budget` when the instruction budget stopped it.
    pub(crate) fn convert<T>(
        &self,
        values_max: usize,
        bytes_max: usize,
        f: impl FnOnce() -> Result<T, String>,
    ) -> ConvertResult<T> {
        charged_conversion(self.shared, values_max, bytes_max, f)
    }

    pub(crate) fn state(&self) -> &State {
        match &self.access {
            Access::Guard(s) | Access::Load(s) | Access::Sense(s, _) => s,
            Access::Handler(ctx) => ctx.state(),
        }
    }

    /// Why a write is refused here, as (message, kind), or `None` when
    /// writes are allowed.
    pub(crate) fn write_refusal(&self, what: &str) -> Option<(String, &'static str)> {
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
            Access::Sense(..) => {
                self.shared.fail(ScriptErrorKind::GuardMutation);
                Some((
                    format!("sensing tools are read-only: a sensing call cannot {what}"),
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

    /// `entities(tag)`: the ids of every entity (with the tag, when one is
    /// given), in id order.
    pub fn entity_ids(&self, lua: &Lua, tag: Option<String>) -> mlua::Result<LuaValue> {
        let all = self.state().entities_sorted();
        // Every entity looked at costs one instruction, every id listed
        // ENTITY_LIST_COST.
        self.charge_work(all.len(), 1)?;
        let ids: Vec<&Entity> = all
            .into_iter()
            .filter(|e| tag.as_ref().is_none_or(|t| e.tags.binary_search(t).is_ok()))
            .collect();
        self.charge_work(ids.len(), ENTITY_LIST_COST)?;
        list(lua, ids.into_iter().map(|e| e.id.to_string()))
    }

    /// `player(id)`: `{id = …, name = …}` of a player in the room, or nil.
    pub fn player(&self, lua: &Lua, id: Option<String>) -> mlua::Result<LuaValue> {
        let id = id.unwrap_or_default();
        match self.state().players.get_key_value(id.as_str()) {
            Some((pid, p)) => player_table(lua, pid, p.name.as_deref()),
            None => Ok(LuaValue::Nil),
        }
    }

    /// `players()`: every player in the room, in id order.
    pub fn players(&self, lua: &Lua) -> mlua::Result<LuaValue> {
        self.charge_work(self.state().players.len(), 2 * ITEM_COST)?;
        let t = lua.create_table()?;
        for (i, (pid, p)) in self.state().players.iter().enumerate() {
            t.raw_set(i + 1, player_table(lua, pid, p.name.as_deref())?)?;
        }
        Ok(LuaValue::Table(t))
    }

    /// `seats()`: a list in seat order, `{id = seat, player = id or nil}`.
    pub fn seats(&self, lua: &Lua) -> mlua::Result<LuaValue> {
        self.charge_work(self.state().seats.len(), 2 * ITEM_COST)?;
        let t = lua.create_table()?;
        for (i, (seat, occupant)) in self.state().seats_in_order().into_iter().enumerate() {
            let s = lua.create_table()?;
            s.raw_set("id", &**seat)?;
            if let Some(p) = occupant {
                s.raw_set("player", &**p)?;
            }
            t.raw_set(i + 1, s)?;
        }
        Ok(LuaValue::Table(t))
    }

    /// `seat_of(player)`: the first seat, in seat order, `player` sits
    /// in (nil when none).
    pub fn seat_of(&self, lua: &Lua, player: Option<&str>) -> mlua::Result<LuaValue> {
        let Some(player) = player else {
            return Ok(LuaValue::Nil);
        };
        match self.seat_name_of(player) {
            Some(seat) => Ok(LuaValue::String(self.shared.string(lua, seat)?)),
            None => Ok(LuaValue::Nil),
        }
    }

    /// `seat_player(seat)`: the player sitting in `seat` (nil when empty
    /// or no such seat).
    pub fn seat_player(&self, lua: &Lua, seat: Option<&str>) -> mlua::Result<LuaValue> {
        match seat
            .and_then(|s| self.state().seats.get(s))
            .and_then(Option::as_ref)
        {
            Some(p) => Ok(LuaValue::String(self.shared.string(lua, p)?)),
            None => Ok(LuaValue::Nil),
        }
    }

    /// `actor()`: the player whose action is running, in a handler (nil
    /// elsewhere, and for system actions).
    pub fn actor(&self, lua: &Lua) -> mlua::Result<LuaValue> {
        match &self.access {
            Access::Handler(ctx) => match ctx.actor() {
                Some(p) => Ok(LuaValue::String(lua.create_string(&**p)?)),
                None => Ok(LuaValue::Nil),
            },
            _ => Ok(LuaValue::Nil),
        }
    }

    /// `settings()`: a copy of the settings in force.
    pub fn settings(&self, lua: &Lua) -> mlua::Result<LuaValue> {
        self.charge_work(self.state().settings.len() + 1, READ_COST)?;
        crate::convert::map_to_lua(lua, &self.state().settings)
    }

    /// `match_book()`: a copy of the match bookkeeping (nil without a
    /// match).
    pub fn match_book(&self, lua: &Lua) -> mlua::Result<LuaValue> {
        match self.state().match_value() {
            Some(m) => {
                self.charge_read(&m)?;
                to_lua(lua, &m)
            }
            None => Ok(LuaValue::Nil),
        }
    }

    /// `sequence()`: the running transaction's sequence.
    pub fn sequence(&self) -> i64 {
        i64::try_from(self.seq).unwrap_or(i64::MAX)
    }

    /// `action_id()`: the running action's id, in a handler.
    pub fn action_id(&self, lua: &Lua) -> mlua::Result<LuaValue> {
        match &self.access {
            Access::Handler(ctx) => Ok(LuaValue::String(
                lua.create_string(ctx.action_id().to_string())?,
            )),
            _ => Ok(LuaValue::Nil),
        }
    }

    /// `stack(id)`: a stack's items bottom → top, or nil.
    pub fn stack_items(&self, lua: &Lua, id: Option<String>) -> mlua::Result<LuaValue> {
        let id = id.unwrap_or_default();
        match self.state().stacks.get(id.as_str()) {
            Some(s) => {
                self.charge_work(s.items.len(), ITEM_COST)?;
                list(lua, s.items.iter().map(|i| i.to_string()))
            }
            None => Ok(LuaValue::Nil),
        }
    }

    /// `next_id(prefix)`: a deterministic id — the prefix, the action's
    /// sequence, and a counter that restarts with every transaction.
    pub fn next_id(&self, lua: &Lua, prefix: Option<String>) -> mlua::Result<LuaValue> {
        let prefix = prefix.unwrap_or_else(|| "id".into());
        let n = self.shared.next_id();
        Ok(LuaValue::String(
            lua.create_string(format!("{prefix}_{}_{n}", self.seq))?,
        ))
    }

    /// `random_float()`: a canonical draw in [0, 1) (handlers; a sensing
    /// call draws from the match's sensing stream).
    pub fn random_float(&mut self, lua: &Lua) -> mlua::Result<MultiValue> {
        let bits = match &mut self.access {
            Access::Sense(_, rng) => rng.next_u64() >> 11,
            _ => {
                if let Some((msg, kind)) = self.write_refusal("draw random numbers") {
                    return refusal(lua, &msg, kind);
                }
                let Access::Handler(ctx) = &mut self.access else {
                    return ret(LuaValue::Nil);
                };
                ctx.random_u64() >> 11
            }
        };
        // Exact: `bits` < 2^53, and 2^53 is a power of two.
        #[allow(clippy::cast_precision_loss)]
        let x = bits as f64 / (1u64 << 53) as f64;
        ret(LuaValue::Number(x))
    }

    /// `random_below(n)`: a canonical draw in [0, n) (handlers; a sensing
    /// call draws from the match's sensing stream).
    pub fn random_below(&mut self, lua: &Lua, n: &LuaValue) -> mlua::Result<MultiValue> {
        if !matches!(self.access, Access::Sense(..)) {
            if let Some((msg, kind)) = self.write_refusal("draw random numbers") {
                return refusal(lua, &msg, kind);
            }
        }
        let n = match *n {
            LuaValue::Integer(n) if n > 0 => n.unsigned_abs(),
            // Exact: an integral double in 1 .. 9e15.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            LuaValue::Number(n) if n >= 1.0 && n.fract() == 0.0 && n < 9.0e15 => n as u64,
            _ => return refusal(lua, "random: the interval is empty or too large", "runtime"),
        };
        let draw = match &mut self.access {
            Access::Sense(_, rng) => rng.below(n.max(1)),
            Access::Handler(ctx) => ctx.random_below(n),
            _ => return ret(LuaValue::Nil),
        };
        let draw = i64::try_from(draw).unwrap_or(i64::MAX);
        ret(LuaValue::Integer(draw))
    }

    /// The entity behind a handle, if it is still there.
    fn by_key(&self, key: i64) -> Option<&Entity> {
        self.state().get(key_from_handle(key))
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

    /// `placement(key)`: whether the handle names an entity, the kind of
    /// place it lies in (`world`, `container`, `snap`, `stack`) and the id
    /// of that container, snap point or stack — as values, for the prelude
    /// to build the table (strings from the cache: nothing to allocate).
    pub fn placement(&self, lua: &Lua, key: i64) -> mlua::Result<(bool, LuaValue, LuaValue)> {
        let Some((kind, id)) = self.placement_of(key) else {
            return Ok((false, LuaValue::Nil, LuaValue::Nil));
        };
        let id = match id {
            Some(i) => LuaValue::String(self.shared.string(lua, i)?),
            None => LuaValue::Nil,
        };
        Ok((true, LuaValue::String(self.shared.string(lua, kind)?), id))
    }

    /// `has_tag(key, tag)`: whether the handle names an entity, and
    /// whether that entity has `tag` (a string).
    pub fn has_tag(&self, key: i64, tag: &LuaValue) -> (bool, bool) {
        match tag {
            LuaValue::String(t) => self.has_tag_bytes(key, Some(&t.as_bytes())),
            _ => self.has_tag_bytes(key, None),
        }
    }

    /// [`Call::has_tag`] of a tag given as bytes (`None`: not a string).
    pub(crate) fn has_tag_bytes(&self, key: i64, tag: Option<&[u8]>) -> (bool, bool) {
        let Some(e) = self.by_key(key) else {
            return (false, false);
        };
        let has = tag.is_some_and(|t| e.tags.iter().any(|x| x.as_bytes() == t));
        (true, has)
    }

    /// [`Call::seat_of`]'s seat, as a name borrowed from the state.
    pub(crate) fn seat_name_of(&self, player: &str) -> Option<&str> {
        self.state()
            .seats_ordered()
            .find(|(_, occupant)| occupant.map(|p| &**p) == Some(player))
            .map(|(seat, _)| &**seat)
    }

    /// [`Call::placement`]'s answer with names borrowed: `None` when the
    /// handle names no entity, else the kind and the id it is in.
    pub(crate) fn placement_of(&self, key: i64) -> Option<(&'static str, Option<&str>)> {
        let e = self.by_key(key)?;
        Some(match &e.placement {
            Placement::World => ("world", None),
            Placement::Container(i) => ("container", Some(&**i)),
            Placement::Snap(i) => ("snap", Some(&**i)),
            Placement::Stack(i) => ("stack", Some(&**i)),
        })
    }

    /// [`Call::lookup_key`] of an id given as text.
    pub(crate) fn lookup_str(&self, id: &str) -> Option<i64> {
        self.state().key(id).map(handle_of)
    }

    /// The entity behind a handle if it is still there and — when `id` is
    /// a string — still has that id.
    pub(crate) fn live_entity(&self, key: i64, id: &LuaValue) -> Option<&Entity> {
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
        self.lookup_str(&id)
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
        // Ids come from the string cache; the prelude makes the proxies.
        self.charge_work(items.len(), HANDLE_COST)?;
        let mut out = Vec::with_capacity(2 + 2 * items.len());
        out.push(LuaValue::Boolean(true));
        out.push(lua_len(items.len()));
        for id in items {
            out.push(LuaValue::String(self.shared.string(lua, id)?));
            out.push(self.state().key(id).map_or(LuaValue::Nil, key_to_lua));
        }
        Ok(MultiValue::from_vec(out))
    }

    /// `component(key, id, name)`: `true, value` of a component (nil when
    /// the entity has none), or `false` when the handle no longer names the
    /// entity with this id. Charged per value built. A handle that is not an
    /// integer names no entity.
    pub fn component(
        &self,
        lua: &Lua,
        key: &LuaValue,
        id: &LuaValue,
        name: &LuaValue,
    ) -> mlua::Result<(bool, LuaValue)> {
        Ok(match self.named_component(key, id, name)? {
            None => (false, LuaValue::Nil),
            Some(Some(v)) => (true, to_lua(lua, &v)?),
            Some(None) => (true, LuaValue::Nil),
        })
    }

    /// `has(key, id, name)`: `true, whether the entity has the component`,
    /// or `false` when the handle no longer names the entity with this id.
    pub fn has(
        &self,
        key: &LuaValue,
        id: &LuaValue,
        name: &LuaValue,
    ) -> mlua::Result<(bool, LuaValue)> {
        // A name that is not a string reads as nil, as it always has.
        Ok(match (self.named_component(key, id, name)?, name) {
            (None, _) => (false, LuaValue::Nil),
            (Some(_), n) if !n.is_string() => (true, LuaValue::Nil),
            (Some(v), _) => (true, LuaValue::Boolean(v.is_some())),
        })
    }

    /// The component `name` of the entity a handle names: `None` when the
    /// handle no longer names it, `Some(None)` when it has no such
    /// component (or `name` is not a string).
    fn named_component(
        &self,
        key: &LuaValue,
        id: &LuaValue,
        name: &LuaValue,
    ) -> mlua::Result<Option<Option<Value>>> {
        let Some(e) = self.live_handle(key, id) else {
            return Ok(None);
        };
        let LuaValue::String(name) = name else {
            return Ok(Some(None));
        };
        self.component_value(e, &name.to_str()?).map(Some)
    }

    /// The entity a handle names, when the handle is an integer, the entity
    /// is still there and — when `id` is a string — still has that id.
    fn live_handle(&self, key: &LuaValue, id: &LuaValue) -> Option<&Entity> {
        match key {
            LuaValue::Integer(key) => self.live_entity(*key, id),
            _ => None,
        }
    }

    /// One component of an entity in its canonical form (the whole entity's
    /// form is built, and charged, as a read).
    fn component_value(&self, e: &Entity, name: &str) -> mlua::Result<Option<Value>> {
        let full = entity_value(e);
        self.charge_read(&full)?;
        Ok(match &full {
            Value::Object(o) => match o.get("components") {
                Some(Value::Object(c)) => c.get(name).cloned(),
                _ => None,
            },
            _ => None,
        })
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
                Some(d) => {
                    let faces = Value::Array(d.effective_faces());
                    self.charge_read(&faces)?;
                    to_lua(lua, &faces)?
                }
                None => LuaValue::Nil,
            },
            "text" => match &c.text {
                Some(t) => LuaValue::String(lua.create_string(t)?),
                None => LuaValue::Nil,
            },
            "tags" => {
                self.charge_work(e.tags.len(), ITEM_COST)?;
                list(lua, e.tags.iter().cloned())?
            }
            "props" => {
                let mut nodes = 1u64;
                let budget = u64::try_from(self.shared.remaining()).unwrap_or(0) / READ_COST;
                let fits = e
                    .props
                    .values()
                    .all(|v| count_values(v, &mut nodes, budget));
                self.charge_counted(fits, nodes)?;
                crate::convert::map_to_lua(lua, &e.props)?
            }
            "heldBy" => match &e.held_by {
                Some(p) => LuaValue::String(lua.create_string(&**p)?),
                None => LuaValue::Nil,
            },
            "count" => match &c.container {
                Some(k) => lua_len(k.items.len()),
                None => LuaValue::Nil,
            },
            "items" => match &c.container {
                Some(k) => {
                    self.charge_work(k.items.len(), ITEM_COST)?;
                    list(lua, k.items.iter().map(|i| i.to_string()))?
                }
                None => LuaValue::Nil,
            },
            other => {
                return Err(mlua::Error::runtime(format!(
                    "unknown entity field '{other}'"
                )))
            }
        };
        Ok(v)
    }

    /// Charges a read that builds `v` in Lua, per value it holds; an error
    /// (the budget marked exhausted) when it does not fit.
    fn charge_read(&self, v: &Value) -> mlua::Result<()> {
        let budget = u64::try_from(self.shared.remaining()).unwrap_or(0) / READ_COST;
        let mut nodes = 0u64;
        let fits = count_values(v, &mut nodes, budget);
        self.charge_counted(fits, nodes)
    }

    /// Charges `nodes` values read ([`READ_COST`] each), or the whole budget
    /// when counting them stopped at what the budget holds (`fits` false).
    fn charge_counted(&self, fits: bool, nodes: u64) -> mlua::Result<()> {
        if fits && self.shared.charge_copy(nodes.saturating_mul(READ_COST)) {
            Ok(())
        } else {
            let _ = self.shared.charge_copy(u64::MAX);
            Err(mlua::Error::runtime("instruction budget exceeded"))
        }
    }

    /// Charges `count` elements a native walks or builds, `cost`
    /// instructions each.
    pub(crate) fn charge_work(&self, count: usize, cost: u64) -> mlua::Result<()> {
        let n = u64::try_from(count)
            .unwrap_or(u64::MAX)
            .saturating_mul(cost);
        crate::errors::spend(self.shared, i64::try_from(n).unwrap_or(i64::MAX))
    }
}

fn player_table(lua: &Lua, id: &str, name: Option<&str>) -> mlua::Result<LuaValue> {
    let t = lua.create_table()?;
    t.raw_set("id", id)?;
    if let Some(n) = name {
        t.raw_set("name", n)?;
    }
    Ok(LuaValue::Table(t))
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
];

/// Instructions charged for each value a read builds (`e.props`,
/// `e:get(...)`): a read's cost grows with what it copies.
const READ_COST: u64 = 32;

/// Instructions charged for each string a native lists (`game.entities()`,
/// `e.tags`, a stack's items): making a Lua string costs about that much
/// (benches/charges.rs).
const ITEM_COST: u64 = 16;

/// Instructions charged for each item `e:items()` hands the prelude (an id
/// from the string cache and a handle; the prelude makes its proxy).
const HANDLE_COST: u64 = 24;

/// Instructions charged for each id `game.entities()` lists (a Lua
/// string, and the proxy the prelude makes of it).
const ENTITY_LIST_COST: u64 = 64;

/// [`Call::convert`] for any caller holding the runtime's [`Shared`]
/// state (a game function's answer has no [`Call`]): `f` run under
/// [`crate::convert::metered`], charged [`CONVERT_COST`] per value and its
/// text by its bytes. A failure is (message, kind): `budget`, `memory`
/// (the room's byte budget) or `runtime`.
pub(crate) fn charged_conversion<T>(
    shared: &crate::shared::Shared,
    values_max: usize,
    bytes_max: usize,
    f: impl FnOnce() -> Result<T, String>,
) -> ConvertResult<T> {
    let affordable = usize::try_from(u64::try_from(shared.remaining()).unwrap_or(0) / CONVERT_COST)
        .unwrap_or(usize::MAX);
    let out = crate::convert::metered(values_max, affordable, bytes_max, f);
    let cost = u64::try_from(out.values)
        .unwrap_or(u64::MAX)
        .saturating_mul(CONVERT_COST)
        .saturating_add(crate::convert::text_cost(out.bytes));
    if out.budget_bound || !shared.charge_copy(cost) {
        let _ = shared.charge_copy(u64::MAX);
        return Err((crate::errors::BUDGET_MSG.to_owned(), "budget"));
    }
    out.result.map_err(|m| {
        let kind = if m.contains("limits.bytesMax") {
            "memory"
        } else {
            "runtime"
        };
        (m, kind)
    })
}
