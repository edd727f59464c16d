//! Subcommands a handler issues: the typed `container.move` path (`move_to`,
//! `move_all_to`) and the general one (`submit(type, k1, v1, …)`), each
//! applied at once inside the transaction; a rejection dooms the action.

use digipology_kernel::state::Placement;
use digipology_kernel::{ActionType, FieldValue, Fields, Id, ScriptErrorKind};
use mlua::{Lua, MultiValue, Value as LuaValue};

use crate::access::{ok_true, refusal, ret, text, Access, Call};
use crate::convert::{to_json_with, Resolve};

impl Call<'_, '_, '_> {
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
        let index = match self.field_value(index, false) {
            Ok(v) => v,
            Err((m, kind)) => {
                return refusal(
                    lua,
                    &format!("container.move: bad payload field index: {m}"),
                    kind,
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
            let index = u64::try_from(index).unwrap_or(u64::MAX);
            let work = ctx.work();
            let result = ctx.move_item(script_id, binding_id, item, from, to, index);
            charge_subcommand(self.shared, ctx.work().saturating_sub(work))?;
            if result.is_err() {
                return self.submitted(lua, "container.move", 0, result);
            }
        }
        ok_true()
    }

    /// A one-entity action in one call (`N.counter_add(handle, id, n)` and
    /// the like): the handle check, then the subcommand with the entity's
    /// id under `entityId` and, unless it is nil, `value` under `value_key`.
    /// Returns `true`, `false, message, kind`, or nil when the handle no
    /// longer names the entity — as [`Call::move_to`].
    pub fn entity_action(
        &mut self,
        lua: &Lua,
        ty: ActionType,
        value_key: Option<&str>,
        key: i64,
        id: &LuaValue,
        value: &LuaValue,
    ) -> mlua::Result<MultiValue> {
        let Some(e) = self.live_entity(key, id) else {
            return ret(LuaValue::Nil);
        };
        let entity = e.id.clone();
        if let Some((msg, kind)) = self.write_refusal(&format!("issue {}", ty.name())) {
            return refusal(lua, &msg, kind);
        }
        let mut payload = Fields::new().with("entityId", &*entity);
        if let Some(k) = value_key.filter(|_| !value.is_nil()) {
            match self.field_value(value, true) {
                Ok(v) => payload.set(k, v),
                Err((m, kind)) => {
                    return refusal(
                        lua,
                        &format!("{}: bad payload field {k}: {m}", ty.name()),
                        kind,
                    )
                }
            }
        }
        self.submit_fields(lua, ty, payload)
    }

    /// `submit(type, k1, v1, …)` without the operation name.
    pub fn submit_args(&mut self, lua: &Lua, args: &MultiValue) -> mlua::Result<MultiValue> {
        self.submit_from(lua, args, 0)
    }
    /// A subcommand from `args[first]` (its type) and the key, value pairs
    /// after it.
    fn submit_from(
        &mut self,
        lua: &Lua,
        args: &MultiValue,
        first: usize,
    ) -> mlua::Result<MultiValue> {
        let action_type = args.get(first).and_then(text).unwrap_or_default();
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
            let value = args.get(i + 1).unwrap_or(&LuaValue::Nil);
            match self.field_value(value, true) {
                Ok(v) => payload.set(&key, v),
                Err((m, kind)) => {
                    return refusal(
                        lua,
                        &format!("{action_type}: bad payload field {key}: {m}"),
                        kind,
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
        let work = ctx.work();
        let result = ctx.submit(script_id, binding_id, action_type, payload.to_json());
        charge_subcommand(self.shared, ctx.work().saturating_sub(work))?;
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
        let work = ctx.work();
        let result = ctx.submit_fields(script_id, binding_id, ty, payload);
        charge_subcommand(self.shared, ctx.work().saturating_sub(work))?;
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

impl Call<'_, '_, '_> {
    /// A Lua value as a payload value ([`field_value`]): a string or a
    /// table may hold at most what the room's byte budget has left, and a
    /// table is charged per value it holds ([`Call::convert`]); storage
    /// nodes resolve to their contents when `storage` is true.
    fn field_value(
        &mut self,
        v: &LuaValue,
        storage: bool,
    ) -> crate::access::ConvertResult<FieldValue> {
        let bytes_max = self.bytes_left();
        match v {
            LuaValue::String(s) if s.as_bytes().len() > bytes_max => Err((
                format!(
                    "a string of {} bytes is more than the room's byte budget has left ({bytes_max} bytes; game.json limits.bytesMax)",
                    s.as_bytes().len()
                ),
                "memory",
            )),
            LuaValue::Table(_) => {
                let none = |_: &mlua::Table, _: usize| None;
                let of_storage = |t: &mlua::Table, d: usize| self.storage_of(t, d);
                let resolve: &Resolve<'_> = if storage { &of_storage } else { &none };
                self.convert(crate::convert::VALUES_MAX, bytes_max, || {
                    field_value(v, resolve)
                })
            }
            LuaValue::String(s) => {
                // Text is charged by its bytes, like text in a table.
                let cost = crate::convert::text_cost(s.as_bytes().len());
                if !self.shared.charge_copy(cost) {
                    return Err((crate::errors::BUDGET_MSG.to_owned(), "budget"));
                }
                field_value(v, &|_, _| None).map_err(|m| (m, "runtime"))
            }
            _ => field_value(v, &|_, _| None).map_err(|m| (m, "runtime")),
        }
    }
}

/// Instructions every subcommand costs besides its script's own work: the
/// kernel's checks, its change and its events (benches/charges.rs).
pub(crate) const SUBCOMMAND_COST: u64 = 100;

/// Instructions each element of a subcommand's kernel work costs (a card
/// shuffled, an item shifted in a list, an item carried on a trip:
/// `ScriptCtx::work`).
pub(crate) const WORK_COST: u64 = 4;

/// Charges a subcommand that did `work` elements of kernel work.
fn charge_subcommand(shared: &crate::shared::Shared, work: u64) -> mlua::Result<()> {
    let n = SUBCOMMAND_COST.saturating_add(work.saturating_mul(WORK_COST));
    crate::errors::spend(shared, i64::try_from(n).unwrap_or(i64::MAX))
}

/// A Lua value as a payload value: scalars directly, tables through JSON
/// (same rules and errors as [`to_json_with`]).
fn field_value(v: &LuaValue, resolve: &Resolve<'_>) -> Result<FieldValue, String> {
    Ok(match v {
        LuaValue::Nil => FieldValue::Null,
        LuaValue::LightUserData(p) if p.0.is_null() => FieldValue::Null,
        LuaValue::Boolean(b) => FieldValue::Bool(*b),
        // Exact: an integer within ±2^53 is a double.
        #[allow(clippy::cast_precision_loss)]
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
