//! The transaction runner: one top-level action = one transaction.
//!
//! Order of work for every action: envelope → registry lookup (unknown types
//! are rejected before anything else) → source rules → the action's own
//! validation (onlyKeys, field shapes, semantics) → guards → mutation → event
//! dispatch to the script host (handlers may issue subcommands, which apply
//! at once) → commit. Any rejection or script failure rolls everything back;
//! the sequence advances either way.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use crate::action::{Action, ActionType, Source, TypeName};
use crate::actions;
use crate::digest::{Digests, LeafChange, Touch};
use crate::event::{ActionId, Event, EventKind, ScriptErrorKind, ScriptFailure};
use crate::host::{NoScripts, ScriptCtx, ScriptHost, Subcommands};
use crate::payload::Fields;
use crate::reject::{RejectCode, Rejection};
use crate::state::{Id, State};
pub use crate::txn::Limits;
use crate::txn::{Buffers, Failure, Txn};
use std::borrow::Cow;

/// What processing (or dry-running) an action produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The sequence the action consumed (or would consume, for a dry run).
    pub seq: u64,
    /// The action id (given, or `a<seq>`).
    pub action_id: ActionId,
    /// Events in emission order. For a rejection: `action.rejected`, then
    /// `script.error` when a script failed.
    pub events: Vec<Event>,
    /// Whether the action committed (or, for a dry run, would commit).
    pub accepted: bool,
}

impl Outcome {
    /// Whether the action committed (or, for a dry run, would commit).
    pub fn accepted(&self) -> bool {
        self.accepted
    }

    /// Why it was rejected, if it was (read from its `action.rejected`).
    pub fn rejection(&self) -> Option<&Rejection> {
        if self.accepted {
            return None;
        }
        self.events.iter().find_map(|e| match &e.kind {
            EventKind::ActionRejected { rejection, .. } => Some(rejection),
            _ => None,
        })
    }
}

/// A room's deterministic kernel: the canonical state and the runner.
#[derive(Clone, Debug)]
pub struct Kernel {
    state: State,
    limits: Limits,
    buffers: Buffers,
    /// Per-leaf digests, when tracked ([`Kernel::track_digests`]).
    digests: Option<Box<Digests>>,
    /// What the committing transaction touched (scratch, reused).
    touched: Vec<Touch>,
}

impl Kernel {
    /// A kernel over a starting state.
    pub fn new(mut state: State) -> Kernel {
        state.recount_held();
        Kernel {
            state,
            limits: Limits::default(),
            buffers: Buffers::default(),
            digests: None,
            touched: Vec::new(),
        }
    }

    /// Replaces the cascade limits.
    pub fn with_limits(mut self, limits: Limits) -> Kernel {
        self.limits = limits;
        self
    }

    /// The byte budget (`Limits::bytes_max`).
    pub fn bytes_max(&self) -> u64 {
        self.limits.bytes_max
    }

    /// Sets the byte budget (`Limits::bytes_max`; docs/lua-api.md, The
    /// byte budget).
    pub fn set_bytes_max(&mut self, bytes_max: u64) {
        self.limits.bytes_max = bytes_max;
    }

    /// The canonical state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The state hash (see [`State::hash`]): kept up to date per action
    /// when digests are tracked, computed from the whole state otherwise.
    pub fn state_hash(&self) -> String {
        let mut out = String::with_capacity(64);
        self.write_state_hash(&mut out);
        out
    }

    /// Appends the state hash (hex) to `out`: [`Kernel::state_hash`]
    /// without a new string.
    pub fn write_state_hash(&self, out: &mut String) {
        match &self.digests {
            Some(d) => d.write_hash(out),
            None => out.push_str(&self.state.hash()),
        }
    }

    /// Keeps a digest of every part of the state from now on, brought up
    /// to date after each committed action from what it touched: the
    /// state hash and [`Kernel::changes`] then cost what an action
    /// touched, not the table. Costs one walk of the state now.
    pub fn track_digests(&mut self) {
        if self.digests.is_none() {
            self.digests = Some(Box::new(Digests::build(&self.state)));
        }
    }

    /// Whether digests are tracked.
    pub fn tracks_digests(&self) -> bool {
        self.digests.is_some()
    }

    /// The parts of the state the last processed action changed, in path
    /// order (empty when it changed nothing, was rejected, or digests are
    /// not tracked).
    pub fn changes(&self) -> &[LeafChange] {
        self.digests.as_ref().map_or(&[], |d| d.changes())
    }

    /// How many parts of the state (leaves) have been re-hashed after
    /// actions since digests began to be tracked: the work tracking costs,
    /// as a count (what the tests bound instead of time).
    pub fn leaves_rehashed(&self) -> u64 {
        self.digests.as_ref().map_or(0, |d| d.rehashed())
    }

    /// Every part of the state with its short digest (see
    /// [`State::digest_map`]).
    pub fn digest_map(&self) -> BTreeMap<String, String> {
        match &self.digests {
            Some(d) => d.map(),
            None => self.state.digest_map(),
        }
    }

    /// Replaces the match bookkeeping (docs/match.md) between actions:
    /// `book` is the canonical JSON text of an object (the caller's to get
    /// right). It is the room's, not a transaction's (a rejected action may
    /// still change it, like the sequence). Its digest is brought up to date, and the
    /// change is reported with the last action's changes.
    pub fn set_match_book(&mut self, book: Option<String>) {
        if self.state.match_book == book {
            return;
        }
        let len = |b: &Option<String>| b.as_ref().map_or(0, |s| s.len() as u64);
        self.state.held = self
            .state
            .held
            .saturating_sub(len(&self.state.match_book))
            .saturating_add(len(&book));
        self.state.match_book = book;
        if let Some(d) = &mut self.digests {
            d.update_match(&self.state);
        }
    }

    /// Processes one action: consumes a sequence, commits or rolls back.
    pub fn process(&mut self, action: &Action, host: &mut dyn ScriptHost) -> Outcome {
        let seq = self.next_sequence();
        self.transact(action, seq, host, Mode::Commit)
    }

    /// Processes `action` only if it commits: exactly [`Kernel::process`]
    /// when it is accepted; when it would be rejected nothing happens at
    /// all — no sequence consumed, no events, the state as it was — like
    /// a dry run (`None`). A bot trying actions until one is legal pays
    /// for the one it plays once, not twice.
    pub fn process_if_accepted(
        &mut self,
        action: &Action,
        host: &mut dyn ScriptHost,
    ) -> Option<Outcome> {
        let seq = self.next_sequence();
        let out = self.transact(action, seq, host, Mode::Try);
        if out.accepted {
            Some(out)
        } else {
            self.state.sequence = seq;
            None
        }
    }

    /// Processes one JSON line. Anything unparseable is consumed as a
    /// `malformed_action` rejection.
    pub fn process_line(&mut self, line: &str, host: &mut dyn ScriptHost) -> Outcome {
        match serde_json::from_str::<Json>(line) {
            Ok(v) => self.process_json(&v, host),
            Err(e) => self.reject_input(
                None,
                None,
                Rejection::new(RejectCode::MalformedAction, format!("not valid JSON: {e}")),
            ),
        }
    }

    /// Processes one parsed JSON action.
    pub fn process_json(&mut self, v: &Json, host: &mut dyn ScriptHost) -> Outcome {
        match Action::from_json(v) {
            Ok(action) => self.process(&action, host),
            Err(r) => {
                let action_type = v.get("type").and_then(Json::as_str).map(str::to_owned);
                let action_id = v
                    .get("actionId")
                    .and_then(Json::as_str)
                    .filter(|s| !s.is_empty())
                    .map(Id::from);
                self.reject_input(action_type, action_id, r)
            }
        }
    }

    /// Consumes a sequence for input that never became an action.
    pub fn reject_input(
        &mut self,
        action_type: Option<String>,
        action_id: Option<Id>,
        rejection: Rejection,
    ) -> Outcome {
        let seq = self.next_sequence();
        if let Some(d) = &mut self.digests {
            d.clear_changes();
        }
        let action_id = ActionId::new(action_id.as_ref(), seq);
        let events = vec![Event {
            seq,
            action_id: action_id.clone(),
            kind: EventKind::ActionRejected {
                action_type: action_type.map(Cow::Owned),
                rejection,
            },
            seen: None,
        }];
        Outcome {
            seq,
            action_id,
            events,
            accepted: false,
        }
    }

    /// Evaluates an action against the current state — the whole
    /// transaction, guards and handlers included — and reports the verdict
    /// and the events it would emit. The state and the sequence are left
    /// exactly as they were.
    pub fn dry_run(&mut self, action: &Action, host: &mut dyn ScriptHost) -> Outcome {
        let seq = self.state.sequence;
        self.transact(action, seq, host, Mode::DryRun)
    }

    fn next_sequence(&mut self) -> u64 {
        let seq = self.state.sequence;
        self.state.sequence = seq + 1;
        seq
    }

    fn transact(
        &mut self,
        action: &Action,
        seq: u64,
        host: &mut dyn ScriptHost,
        mode: Mode,
    ) -> Outcome {
        let commit = mode != Mode::DryRun;
        let action_id = ActionId::new(action.action_id.as_ref(), seq);
        // A dry run, or a try that is refused, leaves the last processed
        // action's changes in place.
        if let (Some(d), Mode::Commit) = (&mut self.digests, mode) {
            d.clear_changes();
        }
        if mode == Mode::DryRun {
            host.set_dry_run(true);
        }
        host.begin_transaction(seq);
        let buffers = std::mem::take(&mut self.buffers);
        let mut txn = Txn::begin(
            &mut self.state,
            seq,
            action_id.clone(),
            self.limits,
            buffers,
        );
        if let crate::action::Source::Player { player_id } = &action.source {
            txn.set_actor(Some(player_id.clone()));
        }
        let result = match seated_names(txn.state(), action) {
            None => execute(&mut txn, action, host),
            Some(payload) => {
                let resolved = Action {
                    payload,
                    ..action.clone()
                };
                execute(&mut txn, &resolved, host)
            }
        };
        let (events, accepted) = match result {
            Ok(()) if commit => {
                if let (Some(d), Mode::Try) = (&mut self.digests, mode) {
                    d.clear_changes();
                }
                let touched = self.digests.is_some().then_some(&mut self.touched);
                let (events, buffers) = txn.commit(touched);
                self.buffers = buffers;
                if let Some(d) = &mut self.digests {
                    d.update(&self.state, &mut self.touched);
                }
                (events, true)
            }
            Ok(()) => {
                let events = txn.take_events();
                self.buffers = txn.rollback();
                (events, true)
            }
            Err(failure) => {
                self.buffers = txn.rollback();
                (
                    rejection_events(seq, &action_id, &action.action_type, failure),
                    false,
                )
            }
        };
        host.end_transaction(accepted && commit);
        if mode == Mode::DryRun {
            host.set_dry_run(false);
        }
        Outcome {
            seq,
            action_id,
            events,
            accepted,
        }
    }
}

/// How a transaction ends when its action succeeds: committed (a refusal
/// is committed too, as rejection events), committed only if accepted
/// (a refusal leaves no trace), or rolled back either way.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Commit,
    Try,
    DryRun,
}

/// A seated player's action names entities as its seat sees them
/// (docs/observations.md, Acting on what a seat sees).
fn seated_names(state: &State, action: &Action) -> Option<Fields> {
    let Source::Player { player_id } = &action.source else {
        return None;
    };
    let seat = state.seat_of(player_id)?;
    state.resolve_names(&action.payload, &crate::observe::Viewer::Seat(seat.clone()))
}

fn rejection_events(
    seq: u64,
    action_id: &ActionId,
    action_type: &TypeName,
    failure: Failure,
) -> Vec<Event> {
    let ev = |kind| Event {
        seq,
        action_id: action_id.clone(),
        kind,
        seen: None,
    };
    let action_type = Some(match action_type {
        TypeName::Registered(ty) => Cow::Borrowed(ty.name()),
        TypeName::Unknown(name) => Cow::Owned(name.to_string()),
    });
    match failure {
        Failure::Rejected(rejection) => vec![ev(EventKind::ActionRejected {
            action_type,
            rejection,
        })],
        Failure::Script(f) => vec![
            ev(EventKind::ActionRejected {
                action_type,
                rejection: Rejection::new(RejectCode::ScriptError, f.message.clone()),
            }),
            ev(EventKind::ScriptError {
                failure: Box::new(f),
                sequence: seq,
            }),
        ],
    }
}

fn execute(txn: &mut Txn<'_>, action: &Action, host: &mut dyn ScriptHost) -> Result<(), Failure> {
    let ty = lookup_type(&action.action_type)?;
    check_source(txn.state(), ty, &action.source)?;
    if let Source::Player { player_id } = &action.source {
        match host.guard_action(txn.state(), player_id, action) {
            crate::host::Verdict::Allow => {}
            crate::host::Verdict::Deny { reason } => {
                return Err(Failure::Rejected(Rejection::new(
                    RejectCode::GuardDenied,
                    reason.unwrap_or_else(|| "can_act refused".into()),
                )))
            }
            crate::host::Verdict::Fail(f) => return Err(Failure::Script(f)),
        }
    }
    actions::apply(txn, ty, action, host)?;
    // The action's own changes within the byte budget (what handlers add
    // is checked as they add it).
    txn.check_held()?;
    if ty == ActionType::MatchHalt {
        // The host ends the match without the game: no handler runs.
        return Ok(());
    }
    dispatch(txn, host)?;
    txn.check_held()?;
    Ok(())
}

fn lookup_type(name: &TypeName) -> Result<ActionType, Rejection> {
    match name {
        TypeName::Registered(ty) => Ok(*ty),
        TypeName::Unknown(name) => Err(Rejection::new(
            RejectCode::UnknownActionType,
            format!("\"{name}\" is not a registered action type"),
        )),
    }
}

/// Registry source rules, then: a player source must be a joined player.
fn check_source(state: &State, ty: ActionType, source: &Source) -> Result<(), Rejection> {
    let sources = ty.sources();
    if !sources.allows(source, state.sandbox_for(sources)) {
        return Err(source_not_allowed(ty, source.kind_name()));
    }
    if let Source::Player { player_id } = source {
        if !state.players.contains_key(&**player_id) {
            return Err(Rejection::new(
                RejectCode::UnknownPlayer,
                format!("player \"{player_id}\" has not joined"),
            ));
        }
    }
    Ok(())
}

/// `source_not_allowed`: the row's accepted sources and the one given.
fn source_not_allowed(ty: ActionType, kind: &str) -> Rejection {
    Rejection::new(
        RejectCode::SourceNotAllowed,
        format!(
            "{} accepts {} sources, not {kind}",
            ty.name(),
            ty.sources().describe()
        ),
    )
}

/// Delivers every buffered event, in emission order, including the events
/// of subcommands that handlers issue along the way.
fn dispatch(txn: &mut Txn<'_>, host: &mut dyn ScriptHost) -> Result<(), Failure> {
    if !host.wants_events() {
        return Ok(());
    }
    let mut i = 0;
    while i < txn.events.len() {
        if !host.wants_event(txn.events[i].type_name()) {
            i += 1;
            continue;
        }
        let event = txn.enter_event(i);
        let mut ctx = ScriptCtx {
            txn,
            event_type: event.type_name(),
            subcommands: &SUBCOMMANDS,
        };
        host.on_event(&mut ctx, &event).map_err(Failure::Script)?;
        if let Some(f) = txn.poisoned() {
            return Err(Failure::Script(f.clone()));
        }
        i += 1;
    }
    Ok(())
}

/// `on_` + the event type with `.` replaced by `_`.
pub fn handler_name(event_type: &str) -> String {
    format!("on_{}", event_type.replace('.', "_"))
}

/// What every [`ScriptCtx`] runs its subcommands with.
static SUBCOMMANDS: Subcommands = Subcommands {
    submit: submit_subcommand,
    move_item: submit_move,
};

fn submit_subcommand(
    ctx: &mut ScriptCtx<'_, '_>,
    script_id: &Id,
    binding_id: &Id,
    action_type: &TypeName,
    payload: Result<Fields, ()>,
) -> Result<(), Rejection> {
    let malformed = payload.is_err().then(|| {
        Rejection::new(
            RejectCode::MalformedAction,
            "a subcommand payload must be an object",
        )
    });
    subcommand(
        ctx,
        script_id,
        binding_id,
        action_type,
        malformed,
        |txn, ty| {
            let payload = payload.unwrap_or_default();
            let action = Action::with_fields(
                ty,
                Source::Script {
                    script_id: script_id.clone(),
                    binding_id: binding_id.clone(),
                },
                payload,
            );
            actions::apply(txn, ty, &action, &mut NoScripts)
        },
    )
}

/// A `container.move` subcommand from decoded arguments: the same checks,
/// events and failure reporting as [`submit_subcommand`] with the payload
/// `{entity, from, to, index}`, without building one.
fn submit_move(
    ctx: &mut ScriptCtx<'_, '_>,
    script_id: &Id,
    binding_id: &Id,
    args: crate::host::MoveArgs<'_>,
) -> Result<(), Rejection> {
    let ty = TypeName::Registered(ActionType::ContainerMove);
    subcommand(ctx, script_id, binding_id, &ty, None, |txn, _| {
        crate::actions::container::apply_move(txn, args).map_err(Failure::Rejected)
    })
}

/// A subcommand's bookkeeping around `run`: an earlier failure, the cascade
/// limits, a payload problem found before (`malformed`), the registry row
/// and its script-source rule; a rejection dooms the transaction.
fn subcommand(
    ctx: &mut ScriptCtx<'_, '_>,
    script_id: &Id,
    binding_id: &Id,
    action_type: &TypeName,
    malformed: Option<Rejection>,
    run: impl FnOnce(&mut Txn<'_>, ActionType) -> Result<(), Failure>,
) -> Result<(), Rejection> {
    // The handler's name is only needed for a failure report: built there.
    let event_type = ctx.event_type;
    let txn = &mut *ctx.txn;
    if txn.poisoned().is_some() {
        return Err(Rejection::new(
            RejectCode::ScriptError,
            "an earlier subcommand failed; this transaction will roll back",
        ));
    }
    let doom = |txn: &mut Txn<'_>, r: Rejection, kind: ScriptErrorKind| {
        txn.poison(ScriptFailure {
            script_id: script_id.to_string(),
            binding_id: binding_id.to_string(),
            function: handler_name(event_type),
            line: None,
            message: format!("subcommand {} rejected: {r}", action_type.as_str()),
            kind,
        });
        Err(r)
    };
    if let Err(limits) = txn.count_subcommand() {
        let r = Rejection::new(
            RejectCode::CascadeLimit,
            format!(
                "event cascade too long (at most {} subcommands per action, depth {})",
                limits.subcommands_max, limits.cascade_depth_max
            ),
        );
        return doom(txn, r, ScriptErrorKind::Budget);
    }
    if let Some(r) = malformed {
        return doom(txn, r, ScriptErrorKind::Subcommand);
    }
    let result = lookup_type(action_type)
        .and_then(|ty| {
            // The script-source rule (what `check_source` applies to a
            // script source), without building one.
            if ty.sources().script {
                Ok(ty)
            } else {
                Err(source_not_allowed(ty, "script"))
            }
        })
        .map_err(Failure::Rejected)
        .and_then(|ty| run(txn, ty))
        // What it made the room hold, within the byte budget.
        .and_then(|()| txn.check_held().map_err(Failure::Rejected));
    match result {
        Ok(()) => Ok(()),
        Err(Failure::Rejected(r)) if r.code == RejectCode::StateFull => {
            doom(txn, r, ScriptErrorKind::Memory)
        }
        Err(Failure::Rejected(r)) => doom(txn, r, ScriptErrorKind::Subcommand),
        Err(Failure::Script(f)) => {
            // Script sources never run guards, so this cannot happen; treat
            // it as the failure it reports.
            let r = Rejection::new(RejectCode::ScriptError, f.message.clone());
            txn.poison(f);
            Err(r)
        }
    }
}
