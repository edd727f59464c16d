//! The script-host trait: how the kernel asks for guard verdicts and hands
//! out events, without knowing that Lua exists.
//!
//! The kernel calls [`ScriptHost::guard`] before it commits a player action
//! that has creator guards, and [`ScriptHost::on_event`] once per emitted
//! event, in emission order, after the action's own mutation. A handler may
//! issue subcommands through [`ScriptCtx::submit`]; each applies at once (the
//! handler reads its own writes), its events join the queue, and a rejected
//! one dooms the whole transaction even if the handler ignores the error.

use crate::action::{Action, ActionType, TypeName};
use crate::event::{Event, ScriptFailure};
use crate::payload::Fields;
use crate::reject::Rejection;
use crate::state::{Id, State};
use crate::transform::Transform;
use crate::txn::Txn;
use crate::value::Value;

/// Which creator guard is being asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuardKind {
    /// `can_grab(player, entity)`
    Grab,
    /// `can_drop(player, entity, transform)`
    Drop,
    /// `can_flip(player, entity)`
    Flip,
    /// `can_press(player, entity)`
    Press,
}

impl GuardKind {
    /// The Lua function name.
    pub fn function_name(self) -> &'static str {
        match self {
            GuardKind::Grab => "can_grab",
            GuardKind::Drop => "can_drop",
            GuardKind::Flip => "can_flip",
            GuardKind::Press => "can_press",
        }
    }
}

/// A guard question.
#[derive(Clone, Copy, Debug)]
pub struct GuardRequest<'a> {
    /// Which guard.
    pub kind: GuardKind,
    /// The acting player.
    pub player_id: &'a str,
    /// The entity acted on.
    pub entity_id: &'a str,
    /// Its handle (so a host needs no second lookup by id).
    pub entity_key: crate::state::EntityKey,
    /// The canonical drop transform (drops only).
    pub transform: Option<&'a Transform>,
}

/// A guard's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every bound guard approved (or none is bound).
    Allow,
    /// A guard said no; the reason (if any) becomes the rejection message.
    Deny {
        /// The creator's reason, shown to the player.
        reason: Option<String>,
    },
    /// A guard failed; the action is rejected with `script_error`.
    Fail(ScriptFailure),
}

/// What the kernel needs from a script runtime. Every method has a default
/// that does nothing, so a room without scripts uses [`NoScripts`].
pub trait ScriptHost {
    /// Asks every guard bound for this question. Guards see the state
    /// read-only.
    fn guard(&mut self, _state: &State, _request: &GuardRequest<'_>) -> Verdict {
        Verdict::Allow
    }

    /// Asks the general guard (`can_act(player, action)`) about a player's
    /// action, before the action's own checks (docs/match.md, Order of
    /// checks). Read-only like every guard.
    fn guard_action(&mut self, _state: &State, _player_id: &str, _action: &Action) -> Verdict {
        Verdict::Allow
    }

    /// Delivers one event to its handlers.
    ///
    /// # Errors
    /// A script failure; the whole transaction rolls back.
    fn on_event(
        &mut self,
        _ctx: &mut ScriptCtx<'_, '_>,
        _event: &Event,
    ) -> Result<(), ScriptFailure> {
        Ok(())
    }

    /// A dry run begins (`true`: the transaction that follows is rolled
    /// back whatever happens) or ends (`false`). A host keeps nothing of a
    /// dry run: what its scripts do then is read-only.
    fn set_dry_run(&mut self, _on: bool) {}

    /// A transaction (a top-level action, or a dry run) begins: budgets
    /// that are counted per transaction restart here.
    fn begin_transaction(&mut self, _seq: u64) {}

    /// The transaction ended; `committed` is false for rejections, failures
    /// and dry runs.
    fn end_transaction(&mut self, _committed: bool) {}

    /// Whether `on_event` does anything at all (lets the kernel skip the
    /// dispatch loop for script-less rooms).
    fn wants_events(&self) -> bool {
        true
    }

    /// Whether `on_event` does anything for events of this type; the kernel
    /// neither copies nor delivers the others.
    fn wants_event(&mut self, _event_type: &'static str) -> bool {
        true
    }
}

/// A host with no scripts: every guard allows, no handler runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoScripts;

impl ScriptHost for NoScripts {
    fn wants_events(&self) -> bool {
        false
    }
}

type GuardFn = dyn FnMut(&State, &GuardRequest<'_>) -> Verdict;
type EventFn = dyn FnMut(&mut ScriptCtx<'_, '_>, &Event) -> Result<(), ScriptFailure>;

/// A script host made of plain Rust closures (tests, benches, and games
/// whose rules are written in Rust).
#[derive(Default)]
pub struct ClosureHost {
    guard: Option<Box<GuardFn>>,
    on_event: Option<Box<EventFn>>,
    /// The event types the closure handles; `None` = all.
    event_types: Option<Vec<&'static str>>,
}

impl ClosureHost {
    /// An empty host.
    pub fn new() -> ClosureHost {
        ClosureHost::default()
    }

    /// Sets the guard closure.
    pub fn with_guard(
        mut self,
        f: impl FnMut(&State, &GuardRequest<'_>) -> Verdict + 'static,
    ) -> ClosureHost {
        self.guard = Some(Box::new(f));
        self
    }

    /// Sets the event closure (it receives every event).
    pub fn with_handler(
        mut self,
        f: impl FnMut(&mut ScriptCtx<'_, '_>, &Event) -> Result<(), ScriptFailure> + 'static,
    ) -> ClosureHost {
        self.on_event = Some(Box::new(f));
        self.event_types = None;
        self
    }

    /// Sets the event closure for events of these types only.
    pub fn with_handler_for(
        mut self,
        event_types: &[&'static str],
        f: impl FnMut(&mut ScriptCtx<'_, '_>, &Event) -> Result<(), ScriptFailure> + 'static,
    ) -> ClosureHost {
        self.on_event = Some(Box::new(f));
        self.event_types = Some(event_types.to_vec());
        self
    }
}

impl ScriptHost for ClosureHost {
    fn guard(&mut self, state: &State, request: &GuardRequest<'_>) -> Verdict {
        match &mut self.guard {
            Some(f) => f(state, request),
            None => Verdict::Allow,
        }
    }

    fn on_event(
        &mut self,
        ctx: &mut ScriptCtx<'_, '_>,
        event: &Event,
    ) -> Result<(), ScriptFailure> {
        match &mut self.on_event {
            Some(f) => f(ctx, event),
            None => Ok(()),
        }
    }

    fn wants_events(&self) -> bool {
        self.on_event.is_some()
    }

    fn wants_event(&mut self, event_type: &'static str) -> bool {
        self.event_types
            .as_ref()
            .is_none_or(|types| types.contains(&event_type))
    }
}

/// A decoded `container.move` payload (the typed subcommand path shares it
/// with the action itself).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MoveArgs<'a> {
    pub entity: &'a str,
    pub from: Option<&'a str>,
    pub to: Option<&'a str>,
    pub index: u64,
}

/// Runs a subcommand from its type and payload (script and binding ids).
pub(crate) type SubmitFn =
    fn(&mut ScriptCtx<'_, '_>, &Id, &Id, &TypeName, Result<Fields, ()>) -> Result<(), Rejection>;

/// Runs a typed `container.move` subcommand.
pub(crate) type MoveFn =
    fn(&mut ScriptCtx<'_, '_>, &Id, &Id, MoveArgs<'_>) -> Result<(), Rejection>;

/// How a subcommand is run: the transaction runner (one floor up) hands
/// these to every [`ScriptCtx`] it makes, so this module never calls up.
pub(crate) struct Subcommands {
    /// A subcommand from its type and payload.
    pub submit: SubmitFn,
    /// A typed `container.move` subcommand.
    pub move_item: MoveFn,
}

/// What an event handler may do: read the state as the transaction sees it,
/// issue subcommands, and write canonical storage.
pub struct ScriptCtx<'t, 's> {
    pub(crate) txn: &'t mut Txn<'s>,
    pub(crate) event_type: &'static str,
    pub(crate) subcommands: &'static Subcommands,
}

impl ScriptCtx<'_, '_> {
    /// The state, including this transaction's writes so far.
    pub fn state(&self) -> &State {
        self.txn.state()
    }

    /// The sequence of the top-level action.
    pub fn sequence(&self) -> u64 {
        self.txn.seq()
    }

    /// The id of the top-level action.
    pub fn action_id(&self) -> &crate::event::ActionId {
        self.txn.action_id()
    }

    /// The player whose top-level action is running (its `player`
    /// source), or `None` when the system or a script issued it.
    pub fn actor(&self) -> Option<&Id> {
        self.txn.actor()
    }

    /// Events emitted so far in this transaction (subcommands included).
    pub fn events(&self) -> &[Event] {
        &self.txn.events
    }

    /// Whether a subcommand has already failed (the transaction is doomed).
    pub fn is_doomed(&self) -> bool {
        self.txn.poisoned().is_some()
    }

    /// Issues a subcommand with the script source and applies it at once.
    /// A payload that is not a JSON object is rejected `malformed_action`.
    ///
    /// # Errors
    /// The subcommand's rejection. The transaction is doomed from then on:
    /// it will roll back with a `script.error` of kind `subcommand` whatever
    /// the handler does next.
    pub fn submit(
        &mut self,
        script_id: &str,
        binding_id: &str,
        action_type: &str,
        payload: serde_json::Value,
    ) -> Result<(), Rejection> {
        // A non-object payload is counted and reported like any rejected
        // subcommand.
        let fields = match payload {
            serde_json::Value::Object(m) => Ok(Fields::from(m)),
            _ => Err(()),
        };
        (self.subcommands.submit)(
            self,
            &Id::from(script_id),
            &Id::from(binding_id),
            &TypeName::new(action_type),
            fields,
        )
    }

    /// [`ScriptCtx::submit`] with a resolved type and a built payload: what
    /// a host on a hot path uses (no JSON, no name lookup, no id copies).
    ///
    /// # Errors
    /// As [`ScriptCtx::submit`].
    pub fn submit_fields(
        &mut self,
        script_id: &Id,
        binding_id: &Id,
        action_type: ActionType,
        payload: Fields,
    ) -> Result<(), Rejection> {
        (self.subcommands.submit)(
            self,
            script_id,
            binding_id,
            &TypeName::Registered(action_type),
            Ok(payload),
        )
    }

    /// A `container.move` subcommand from its arguments: the same checks,
    /// events and failure reporting as [`ScriptCtx::submit_fields`] with the
    /// payload `{entity, from, to, index}` (null `from`/`to` = the world),
    /// without building one. What a host moving many items uses.
    ///
    /// # Errors
    /// As [`ScriptCtx::submit`].
    pub fn move_item(
        &mut self,
        script_id: &Id,
        binding_id: &Id,
        entity: &str,
        from: Option<&str>,
        to: Option<&str>,
        index: u64,
    ) -> Result<(), Rejection> {
        let args = MoveArgs {
            entity,
            from,
            to,
            index,
        };
        (self.subcommands.move_item)(self, script_id, binding_id, args)
    }

    /// A uniform draw in `[0, n)` from the canonical RNG (rolled back with
    /// the transaction). `n` must be positive.
    pub fn random_below(&mut self, n: u64) -> u64 {
        self.txn.rng().below(n.max(1))
    }

    /// 64 random bits from the canonical RNG.
    pub fn random_u64(&mut self) -> u64 {
        self.txn.rng().next_u64()
    }

    /// A script's storage root to change in place (see
    /// `Txn::storage_root_mut`: one rollback copy per transaction, not per
    /// write).
    pub fn storage_root_mut(&mut self, script_id: &str) -> &mut Value {
        self.txn.storage_root_mut(script_id)
    }

    /// Sets (`Some`) or clears (`None`) a script's canonical storage value;
    /// rolled back with the transaction.
    pub fn set_storage(&mut self, script_id: &str, value: Option<Value>) {
        self.txn.set_storage(script_id, value);
    }

    /// Bytes the room may still take on before its byte budget refuses
    /// (docs/lua-api.md, The byte budget): the most a value a script hands
    /// the host now may hold.
    pub fn bytes_left(&mut self) -> u64 {
        self.txn.bytes_left()
    }

    /// Whether a write into a storage root (through
    /// [`ScriptCtx::storage_root_mut`]) that adds `grown` bytes and frees
    /// `shrunk`, by the byte budget's measure (`digipology_kernel::bytes`),
    /// fits the budget.
    ///
    /// # Errors
    /// A message saying the budget is spent.
    pub fn storage_fits(&mut self, grown: u64, shrunk: u64) -> Result<(), String> {
        self.txn.storage_fits(grown, shrunk)
    }

    /// Records a write made in a storage root in place, which added
    /// `grown` bytes and freed `shrunk` (the host measures what it wrote
    /// and what it replaced: `digipology_kernel::bytes::value_bytes`, plus
    /// a new key's bytes). What [`ScriptCtx::storage_fits`] allowed.
    pub fn storage_resized(&mut self, grown: u64, shrunk: u64) {
        self.txn.storage_resized(grown, shrunk);
    }

    /// Elements the transaction's kernel work has walked or moved so far
    /// (shuffles, list inserts and removals, trips, stacks built): a host
    /// charges the difference after a subcommand to its script.
    pub fn work(&self) -> u64 {
        self.txn.work()
    }
}
