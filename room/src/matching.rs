//! The room's side of the match layer (docs/match.md): the order of checks
//! around each input, the follow-ups the room sequences itself (host
//! events, safe defaults, the result `is_terminal()` announces), and
//! observations.

use std::collections::BTreeMap;
use std::io::Write;

use digipology_kernel::{Action, Outcome, RejectCode, Rejection, Viewer};
use serde_json::{json, Value};

use crate::matches::observation::{candidates, match_parts, Candidate};
use crate::matches::{over, schema, Expiry, FollowUp, MatchConfig, MatchLayer, Origin, Processed};
use crate::record::Given;
use crate::room::{system, Room};

/// Codes that mean the input broke its schema (never metered).
const SCHEMA_CODES: [RejectCode; 9] = [
    RejectCode::MalformedAction,
    RejectCode::UnknownActionType,
    RejectCode::SourceNotAllowed,
    RejectCode::UnknownPlayer,
    RejectCode::UnknownKey,
    RejectCode::MissingField,
    RejectCode::InvalidType,
    RejectCode::NotFinite,
    RejectCode::InvalidValue,
];

/// What the checks before the kernel decided.
#[derive(Default)]
struct Gate {
    /// The seat of the seated player who sent it.
    seat: Option<String>,
    /// Whether it passed its schema (and so is metered).
    metered: bool,
    /// A sensing call with its answer, which the kernel processes
    /// instead (paid for only when it commits).
    sensed: Option<Sensed>,
}

/// A sensing call answered: the call with its answer, its price, and the
/// sensing stream after it.
struct Sensed {
    action: Action,
    resource: String,
    cost: i64,
    rng: Vec<String>,
}

impl Room {
    /// Runs this room as a match under `config` (docs/match.md). A started
    /// room whose state holds a match book (a resumed room) keeps it.
    ///
    /// # Errors
    /// The state's book is not one this layer wrote.
    pub fn set_match(&mut self, config: MatchConfig) -> Result<(), String> {
        let mut layer = MatchLayer::new(config, self.kernel().state());
        // A room that has not started takes a fresh book (a room's own
        // config replacing the game's).
        let started = self.kernel().state().sequence > 0;
        if let (true, Some(book)) = (started, &self.kernel().state().match_book) {
            layer.restore(book)?;
        }
        let text = layer.book_text();
        self.matchup = Some(Box::new(layer));
        self.set_book(text);
        Ok(())
    }

    fn set_book(&mut self, text: String) {
        self.kernel_mut().set_match_book(Some(text));
    }

    /// The match layer, when the room runs a match.
    pub fn match_layer(&self) -> Option<&MatchLayer> {
        self.matchup.as_deref()
    }

    /// Whether `seat` is acting now.
    fn is_acting(&self, seat: &str) -> bool {
        self.matchup.as_ref().is_some_and(|m| {
            m.book
                .seats
                .get(seat)
                .is_some_and(|s| s.participation == crate::matches::Participation::Acting)
        })
    }

    /// Whether the match has a result (`match_over` or `match_aborted`).
    pub fn is_over(&self) -> bool {
        self.matchup.as_ref().is_some_and(|m| m.is_over())
    }

    /// The checks before the kernel (docs/match.md, Order of checks):
    /// the result, the schema, the action charge, the phase's tools.
    fn gate(&mut self, action: &Action) -> Result<Gate, Rejection> {
        let Some(layer) = self.matchup.as_deref_mut() else {
            return Ok(Gate::default());
        };
        if layer.is_over() {
            return Err(over());
        }
        let player = action.source.player_id();
        let state = self.kernel.state();
        let seat = player
            .and_then(|p| state.seat_of(p))
            .map(ToString::to_string);
        let Some(seat_id) = seat.clone() else {
            return Ok(Gate {
                seat,
                ..Gate::default()
            });
        };
        if self.origin == Origin::SafeDefault {
            return Ok(Gate {
                seat,
                ..Gate::default()
            });
        }
        let ty = action.action_type.as_str();
        schema::check_fields(ty, &action.payload)?;
        if ty == "match.sense" {
            let sensed = self.sense(action, &seat_id)?;
            return Ok(Gate {
                seat,
                metered: false,
                sensed: Some(sensed),
            });
        }
        let Some(layer) = self.matchup.as_deref_mut() else {
            return Ok(Gate::default());
        };
        if let Some(c) = layer.config.action.clone() {
            let have = layer.balance(&seat_id, &c.resource);
            if have < c.cost {
                return Err(Rejection::new(
                    RejectCode::ResourceExhausted,
                    // No balance in the text: every viewer gets the message.
                    format!("this seat cannot pay for an action ({})", c.resource),
                ));
            }
            layer.charge(&seat_id, &c.resource, c.cost);
        }
        if let (Some(p), Some(declared)) = (&layer.book.phase, &layer.config.phases) {
            if !declared.contains_key(p) && ty != "match.sense" {
                // The game's bug, not the seat's: not charged.
                return Err(Rejection::new(
                    RejectCode::NotInPhase,
                    format!("the game's current phase {p} is not one of match.phases: no tool is legal in it"),
                ));
            }
        }
        if !layer.config.phase_allows(layer.book.phase.as_deref(), ty) {
            // Metered from here on: a game rejection.
            let phase = layer.book.phase.clone().unwrap_or_default();
            if self.charge_invalid(&seat_id) {
                self.gate_exhausted = Some(seat_id);
            }
            return Err(Rejection::new(
                RejectCode::NotInPhase,
                // The phase is public: named unquoted, so no viewer's copy
                // of the message loses it.
                format!("{ty} is not one of the tools of phase {phase}"),
            ));
        }
        if self.names_anothers_piece(action, &seat_id) {
            // A game rejection, as a guard's would be.
            if self.charge_invalid(&seat_id) {
                self.gate_exhausted = Some(seat_id);
            }
            return Err(Rejection::new(
                RejectCode::NotYours,
                "that piece belongs to another seat",
            ));
        }
        Ok(Gate {
            seat,
            metered: true,
            sensed: None,
        })
    }

    /// Whether a seat's action names another seat's piece
    /// (`match.ownership`). Only what the seat sees in full, named by an
    /// action it may send at all: a refusal for it never tells the seat
    /// more than it sees, nor charges it where the kernel would refuse the
    /// source for free.
    fn names_anothers_piece(&self, action: &Action, seat: &str) -> bool {
        let Some(layer) = self.matchup.as_deref() else {
            return false;
        };
        let state = self.kernel.state();
        layer.config.ownership != crate::matches::Ownership::None
            && state.players_may_submit(action.action_type.as_str())
            && state
                .named_in_full(&action.payload, &Viewer::Seat(seat.into()))
                .into_iter()
                .any(|e| layer.config.not_yours(e, seat, &state.seat_order))
    }

    /// A sensing call (docs/match.md, Sensing tools): the tool must be
    /// offered and paid for; its answer comes from `sense_<name>(seat,
    /// input)` run read-only with the match's sensing RNG. The call as the
    /// kernel takes it, with the answer.
    fn sense(&mut self, action: &Action, seat: &str) -> Result<Sensed, Rejection> {
        let payload = action.payload.to_json();
        let name = payload
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let input = payload.get("input").cloned().unwrap_or(Value::Null);
        let layer = self
            .matchup
            .as_deref_mut()
            .ok_or_else(|| Rejection::new(RejectCode::NoMatch, "this room runs no match"))?;
        let Some(charge) = layer.config.sensing.get(&name).cloned() else {
            return Err(Rejection::new(
                RejectCode::InvalidValue,
                format!("payload.name: the match offers no sensing tool {name}"),
            ));
        };
        let have = layer.balance(seat, &charge.resource);
        if have < charge.cost {
            return Err(Rejection::new(
                RejectCode::ResourceExhausted,
                format!(
                    "this seat cannot pay for sensing with {name} ({})",
                    charge.resource
                ),
            ));
        }
        let mut rng = layer
            .book
            .sense_rng
            .as_deref()
            .and_then(crate::matches::rng_from_words)
            .unwrap_or_else(|| digipology_kernel::rng::Rng::from_seed(0));
        let input_value = digipology_kernel::Value::from_json(&input).map_err(|e| {
            Rejection::new(
                RejectCode::InvalidValue,
                format!("payload.input: {}", e.message),
            )
        })?;
        let state = self.kernel.state();
        let answer = match self.scripts.as_deref_mut() {
            Some(h) => h.sense(state, &name, seat, &input_value, &mut rng),
            None => None,
        };
        let answer = match answer {
            Some(Ok(v)) => v.to_json(),
            None => {
                return Err(Rejection::new(
                    RejectCode::InvalidValue,
                    format!("payload.name: the game defines no sense_{name}"),
                ))
            }
            Some(Err(f)) => {
                let line = format!("sense_{name} failed: {}", f.message);
                self.notice(&line);
                return Err(Rejection::new(RejectCode::ScriptError, line));
            }
        };
        let mut replaced = action.clone();
        replaced.payload.set("answer", answer);
        Ok(Sensed {
            action: replaced,
            resource: charge.resource,
            cost: charge.cost,
            rng: crate::matches::rng_words(&rng),
        })
    }

    /// Charges a game-rejected attempt; whether the seat's retries are now
    /// exhausted.
    fn charge_invalid(&mut self, seat: &str) -> bool {
        let Some(layer) = self.matchup.as_deref_mut() else {
            return false;
        };
        let Some(c) = layer.config.invalid_action.clone() else {
            return false;
        };
        layer.charge(seat, &c.resource, c.cost) == 0
    }

    /// [`Room::submit_json`] for a room that runs a match.
    pub(crate) fn submit_match_json(
        &mut self,
        action: Value,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        match Action::from_json(&action) {
            Ok(typed) => self.submit_match(typed, Some(&action), events),
            // Not an action: after the result, refused as such; before,
            // the kernel's own rejection (never metered).
            Err(_) => {
                let out = if self.is_over() {
                    let ty = action
                        .get("type")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    self.kernel.reject_input(ty, None, over())
                } else {
                    let (kernel, host) = self.parts();
                    kernel.process_json(&action, host)
                };
                // Nothing was accepted: the book has nothing to follow up.
                let at = self.clock;
                self.book_after(&out, None, at);
                self.finish(out, Some(Given::Json(&action)), events)
            }
        }
    }

    /// One action in a room that runs a match (docs/match.md, Order of
    /// checks): the checks before the kernel, the kernel, the charge of a
    /// game rejection, the book, then the room's own follow-ups. `json`
    /// is the input as given, when it came as JSON (the record keeps it).
    pub(crate) fn submit_match(
        &mut self,
        action: Action,
        json: Option<&Value>,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        let mut exhausted = None;
        let (out, seat) = match self.gate(&action) {
            Err(r) => {
                // A phase refusal was charged as a game rejection.
                exhausted = self.gate_exhausted.take();
                let ty = Some(action.action_type.as_str().to_owned());
                (
                    self.kernel.reject_input(ty, action.action_id.clone(), r),
                    None,
                )
            }
            Ok(gate) => {
                let (kernel, host) = self.parts();
                let out = kernel.process(gate.sensed.as_ref().map_or(&action, |s| &s.action), host);
                if let (Some(s), Some(seat), true) = (&gate.sensed, &gate.seat, out.accepted()) {
                    if let Some(layer) = self.matchup.as_deref_mut() {
                        layer.charge(seat, &s.resource, s.cost);
                        layer.book.sense_rng = Some(s.rng.clone());
                    }
                }
                // A sensing call is no decision: it does not end the seat's.
                let seat = if gate.sensed.is_some() {
                    None
                } else {
                    gate.seat.clone()
                };
                if gate.metered {
                    if let (Some(seat), Some(r)) = (&gate.seat, out.rejection()) {
                        let charged =
                            !SCHEMA_CODES.contains(&r.code) && r.code != RejectCode::ScriptError;
                        if charged && self.charge_invalid(seat) {
                            exhausted = Some(seat.clone());
                        }
                    }
                }
                (out, seat)
            }
        };
        self.conclude(&action, json, out, (seat, exhausted), events)
    }

    /// What follows the kernel's outcome of a match action: a refused host
    /// event noted, the book, the event lines and record, then the room's
    /// own follow-ups (a seat's safe default once its retries ran out, host
    /// events, the finish). `seat` is the seat whose decision it was;
    /// `exhausted` the seat whose invalid retries it used up.
    fn conclude(
        &mut self,
        action: &Action,
        json: Option<&Value>,
        out: Outcome,
        (seat, exhausted): (Option<String>, Option<String>),
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        let at = self.clock;
        if !out.accepted() && action.action_type.as_str() == "match.host_event" {
            let p = action.payload.to_json();
            let kind = p.get("kind").and_then(Value::as_str).unwrap_or_default();
            let seat = p.get("seat").and_then(Value::as_str);
            if let Some(m) = self.matchup.as_deref_mut() {
                m.host_event_refused(kind, seat, at);
            }
            self.note_refused_host_event(kind, seat);
        }
        let follow = self.book_after(&out, seat.as_deref(), at);
        let given = match json {
            Some(v) => Given::Json(v),
            None => Given::Typed(action),
        };
        self.finish(out, Some(given), events)?;
        // What follows is the room's own input, never a safe default.
        self.origin = Origin::Input;
        if !self.autofire {
            return Ok(());
        }
        if let Some(seat) = exhausted {
            self.raise(at, "invalid_retries_exhausted", Some(&seat), events)?;
            // A seat that is not to act has no decision to default.
            if self.is_acting(&seat) {
                self.commit_safe_default(&seat, at, events)?;
            }
        }
        for f in follow {
            if self.is_over() {
                break;
            }
            match f {
                FollowUp::HostEvent { kind, seat } => {
                    self.raise(at, kind, seat.as_deref(), events)?;
                }
                FollowUp::Finish(scores) => {
                    let a = with_at(system("match.finish", json!({ "scores": scores })), at);
                    self.submit_json(a, events)?;
                }
            }
        }
        Ok(())
    }

    /// Brings the book up to date after an outcome and puts it in the
    /// state (before the record line is written, so the line's hash
    /// covers it).
    fn book_after(&mut self, out: &Outcome, seat: Option<&str>, at: i64) -> Vec<FollowUp> {
        let autofire = self.autofire;
        let Some(mut layer) = self.matchup.take() else {
            return Vec::new();
        };
        let mut notices = Vec::new();
        let follow = layer.after_action(
            at,
            Processed {
                events: &out.events,
                accepted: out.accepted(),
                seat,
                autofire,
            },
            self.kernel.state(),
            self.scripts.as_deref_mut(),
            &mut notices,
        );
        let text = layer.book_text();
        self.matchup = Some(layer);
        self.set_book(text);
        for n in notices {
            self.fault(&n);
        }
        follow
    }

    /// Sequences a host event at `at`.
    fn raise(
        &mut self,
        at: i64,
        kind: &str,
        seat: Option<&str>,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        let phase = self.matchup.as_ref().and_then(|m| m.book.phase.clone());
        let a = with_at(
            system(
                "match.host_event",
                json!({"kind": kind, "seat": seat, "phase": phase}),
            ),
            at,
        );
        self.submit_json(a, events)
    }

    /// Commits a seat's safe default at `at`, if it has one and a player.
    fn commit_safe_default(
        &mut self,
        seat: &str,
        at: i64,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        if self.is_over() {
            return Ok(());
        }
        let Some(mut a) = self.safe_default_action(seat) else {
            return Ok(());
        };
        a["at"] = json!(at);
        self.note_safe_default(seat);
        self.submit_safe_json(a, events)
    }

    /// The action `seat`'s safe default would be now (docs/match.md, Safe
    /// defaults), as its player would submit it: what a built-in bot
    /// plays. `None` when the seat is empty or the game has none.
    pub fn safe_default_action(&mut self, seat: &str) -> Option<Value> {
        let player = self.kernel.state().seats.get(seat).cloned().flatten()?;
        let mut notices = Vec::new();
        let found = MatchLayer::safe_default(
            seat,
            self.kernel.state(),
            self.scripts.as_deref_mut(),
            &mut notices,
        );
        for n in notices {
            self.fault(&n);
        }
        let (ty, payload) = found?;
        Some(from_player(
            &player,
            json!({"type": ty, "payload": payload}),
        ))
    }

    /// Processes an action as a safe default the room committed (a
    /// replay's record marks them): neither phase-checked nor metered.
    ///
    /// # Errors
    /// Writing events or the record failed.
    pub fn submit_safe_json(
        &mut self,
        action: Value,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        // Any catch-up before it is ordinary input.
        self.reach(action.get("at").and_then(Value::as_i64), events)?;
        self.origin = Origin::SafeDefault;
        let result = self.submit_json(action, events);
        self.origin = Origin::Input;
        result
    }

    /// Fires one expiry at its time (the clock is already there).
    pub(crate) fn fire_expiry(&mut self, e: Expiry, events: &mut dyn Write) -> std::io::Result<()> {
        match e.kind {
            "phase_deadline" => {
                // Seats that have not acted get their safe defaults first;
                // the deadline is raised unless that closed the phase.
                let begun = self.matchup.as_ref().map(|m| m.book.phases_begun);
                let acting = self
                    .matchup
                    .as_ref()
                    .map(|m| m.acting())
                    .unwrap_or_default();
                for seat in acting {
                    self.commit_safe_default(&seat, e.at, events)?;
                }
                let same = self.matchup.as_ref().map(|m| m.book.phases_begun) == begun;
                if same && !self.is_over() {
                    self.raise(e.at, "phase_deadline", None, events)?;
                }
            }
            kind => {
                self.raise(e.at, kind, e.seat.as_deref(), events)?;
                if kind == "decision_expired" {
                    if let Some(seat) = &e.seat {
                        self.commit_safe_default(seat, e.at, events)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// What `viewer` receives of the match now (docs/match.md,
    /// Observations): `{seq, seat, phase, participation, clocks,
    /// resources, view, legalActions, result}`.
    pub fn observation(&mut self, viewer: &Viewer) -> Value {
        self.observation_at(viewer, self.clock)
    }

    /// [`Room::observation`] with its clocks read at `now` (a room run in
    /// real time, whose clock stands at its last input): a running clock
    /// shows what is left of it then. The room's own clock does not move.
    /// What the game said in it — the phase's name, the legal actions, why
    /// the match was aborted, its view — names entities as the viewer sees
    /// them (docs/observations.md, Text a game writes).
    pub fn observation_at(&mut self, viewer: &Viewer, now: i64) -> Value {
        let now = now.max(self.clock);
        let mut doc = match_parts(self.matchup.as_deref(), self.kernel.state(), viewer, now);
        let view = self.observe(viewer).to_json();
        doc.insert("view".into(), view);
        let mut legal = match viewer {
            Viewer::Seat(s) => Value::Array(self.legal_actions(s)),
            _ => Value::Array(Vec::new()),
        };
        let state = self.kernel.state();
        if let Value::Array(list) = &mut legal {
            for a in list.iter_mut().filter_map(Value::as_object_mut) {
                // An action's type is a registry name, not the game's text.
                let ty = a.remove("type");
                for v in a.values_mut() {
                    state.scrub_json(v, viewer);
                }
                if let Some(ty) = ty {
                    a.insert("type".into(), ty);
                }
            }
        }
        doc.insert("legalActions".into(), legal);
        if let Some(phase) = doc.get_mut("phase") {
            state.scrub_json(phase, viewer);
        }
        if let Some(reason) = doc.get_mut("result").and_then(|r| r.get_mut("reason")) {
            state.scrub_json(reason, viewer);
        }
        Value::Object(doc)
    }

    /// A seat's legal actions now: the game's `legal_actions(seat)`, else
    /// every candidate (docs/match.md) a dry run would commit, within the
    /// phase's tools. None once the match is over.
    pub fn legal_actions(&mut self, seat: &str) -> Vec<Value> {
        if self.is_over() {
            return Vec::new();
        }
        if let Some(listed) = self.listed_actions(seat) {
            return listed;
        }
        let Some((player, list)) = self.candidates_of(seat) else {
            return Vec::new();
        };
        let mut legal = Vec::new();
        for c in list {
            if self.accepts(&player, &c) {
                legal.push(json!({"type": c.action_type(), "payload": c.payload()}));
            }
        }
        legal
    }

    /// The first of a seat's legal actions in the order `arrange` gives
    /// (a permutation of `0..n` for `n` candidates), as its player would
    /// submit it. In a random order that is a uniformly random legal
    /// action, for the cost of dry-running only the candidates before it
    /// (what `simulate`'s bots play).
    pub fn first_legal(
        &mut self,
        seat: &str,
        arrange: &mut dyn FnMut(usize) -> Vec<usize>,
    ) -> Option<Value> {
        if self.is_over() {
            return None;
        }
        if let Some(listed) = self.listed_actions(seat) {
            let player = self.kernel.state().seats.get(seat).cloned().flatten()?;
            let first = arrange(listed.len()).first().copied()?;
            return Some(from_player(&player, listed.into_iter().nth(first)?));
        }
        let (player, list) = self.candidates_of(seat)?;
        for i in arrange(list.len()) {
            let Some(c) = list.get(i) else {
                continue;
            };
            if self.accepts(&player, c) {
                return Some(as_player(&player, c));
            }
        }
        None
    }

    /// Plays, at room time `at`, the first of a seat's candidate actions
    /// in the order `arrange` gives that its player may send — what
    /// submitting [`Room::first_legal`]'s answer stamped `at` does, for
    /// the cost of committing it once: each candidate is processed only if
    /// it commits ([`Kernel::process_if_accepted`]), so a refused one
    /// leaves nothing behind in the state. (The played action's callbacks
    /// run once, not after a dry run of them: only Lua values outside the
    /// state, which scripts treat as constants, could tell.)
    ///
    /// Whether one was played (when none was, the clock stays where it
    /// was). `None` when this room cannot try actions that way — something
    /// is due before `at` (which would change the table first), the game
    /// lists its own legal actions, or every action has a charge: ask
    /// [`Room::first_legal`] then.
    ///
    /// # Errors
    /// Writing events failed.
    ///
    /// [`Kernel::process_if_accepted`]: digipology_kernel::Kernel::process_if_accepted
    pub fn play_first_legal(
        &mut self,
        seat: &str,
        at: i64,
        arrange: &mut dyn FnMut(usize) -> Vec<usize>,
        events: &mut dyn Write,
    ) -> std::io::Result<Option<bool>> {
        let Some(layer) = self.matchup.as_deref() else {
            return Ok(None);
        };
        let listed = self
            .scripts
            .as_deref()
            .is_some_and(|h| h.defines("legal_actions"));
        let due = self.next_due().is_some_and(|d| d < at);
        if listed || due || layer.config.action.is_some() || self.origin != Origin::Input {
            return Ok(None);
        }
        if self.is_over() {
            return Ok(Some(false));
        }
        let Some((player, list)) = self.candidates_of(seat) else {
            return Ok(Some(false));
        };
        let was = self.clock;
        // Nothing is due before `at`: reaching it fires nothing.
        self.clock = self.clock.max(at);
        for i in arrange(list.len()) {
            let Some(c) = list.get(i) else {
                continue;
            };
            if !self.phase_tool(c.action_type()) {
                continue;
            }
            let mut action = c.action(&player);
            action.at = Some(self.clock);
            // Without an action charge and within the phase's tools, the
            // checks before the kernel change nothing: a refusal there is
            // simply not a legal action.
            let Ok(gate) = self.gate(&action) else {
                continue;
            };
            let (kernel, host) = self.parts();
            let Some(out) = kernel.process_if_accepted(&action, host) else {
                continue;
            };
            self.conclude(&action, None, out, (gate.seat, None), events)?;
            return Ok(Some(true));
        }
        self.clock = was;
        Ok(Some(false))
    }

    /// The first of a seat's candidate actions in the order `arrange`
    /// gives, legal or not, as its player would submit it (`simulate`'s
    /// fuzz bot).
    pub fn first_candidate(
        &self,
        seat: &str,
        arrange: &mut dyn FnMut(usize) -> Vec<usize>,
    ) -> Option<Value> {
        let (player, list) = self.candidates_of(seat)?;
        let first = arrange(list.len()).first().copied()?;
        Some(as_player(&player, list.get(first)?))
    }

    /// The seat's player and its candidate actions (none without a player).
    fn candidates_of(&self, seat: &str) -> Option<(digipology_kernel::Id, Vec<Candidate>)> {
        let state = self.kernel.state();
        let player = state.seats.get(seat).cloned().flatten()?;
        // Another seat's pieces are no candidates where the match says so.
        let config = self.matchup.as_deref().map(|m| &m.config);
        let theirs = |e: &digipology_kernel::Entity| {
            config.is_some_and(|c| c.not_yours(e, seat, &state.seat_order))
        };
        let list = candidates(state, (seat, &player), &theirs);
        Some((player, list))
    }

    /// Whether an action of type `ty` is one of the current phase's tools
    /// (any is, without a match).
    fn phase_tool(&self, ty: &str) -> bool {
        self.matchup
            .as_deref()
            .is_none_or(|m| m.config.phase_allows(m.book.phase.as_deref(), ty))
    }

    /// Whether the seat's player may send this action now: the phase's
    /// tools allow it and a dry run would commit it.
    /// Why each of a seat's candidate actions (docs/match.md) would be
    /// refused now, counted by reason: a rejection's code, a script error
    /// as `script_error at FILE:LINE`, a tool its phase does not offer as
    /// `not in this phase`. Empty when one would commit, the game lists its
    /// own legal actions, or the seat has none — what a match that stalled
    /// with the seat still acting can say for it.
    pub fn refusals_of(&mut self, seat: &str) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        if self.is_over() || self.listed_actions(seat).is_some() {
            return out;
        }
        let Some((player, list)) = self.candidates_of(seat) else {
            return out;
        };
        for c in &list {
            let why = match self.dry_run_candidate(&player, c) {
                Some(done) if done.accepted() => return BTreeMap::new(),
                Some(done) => refusal(&done),
                None => "not in this phase".to_owned(),
            };
            *out.entry(why).or_default() += 1;
        }
        out
    }

    fn accepts(&mut self, player: &digipology_kernel::Id, candidate: &Candidate) -> bool {
        self.dry_run_candidate(player, candidate)
            .is_some_and(|done| done.accepted())
    }

    /// A dry run of `candidate` as `player` sends it; `None` when the
    /// phase does not offer its tool.
    fn dry_run_candidate(
        &mut self,
        player: &digipology_kernel::Id,
        candidate: &Candidate,
    ) -> Option<Outcome> {
        if !self.phase_tool(candidate.action_type()) {
            return None;
        }
        let action = candidate.action(player);
        let (kernel, host) = self.parts();
        Some(kernel.dry_run(&action, host))
    }

    /// The game's own bot's move for `seat`: its `bot(seat, roll)`
    /// (docs/simulate.md), given a random `roll` to vary its play; `None`
    /// when the game has no bot, the bot passes, or it failed (with a
    /// notice). The action is the seat's player's.
    pub fn game_bot(&mut self, seat: &str, roll: u32) -> Option<Value> {
        if self.is_over() {
            return None;
        }
        let state = self.kernel.state();
        let player = state.seats.get(seat).cloned().flatten()?;
        let h = self.scripts.as_deref_mut()?;
        if !h.defines("bot") {
            return None;
        }
        let args = [
            digipology_kernel::Value::from(seat),
            digipology_kernel::Value::from(f64::from(roll)),
        ];
        match h.query(state, "bot", &args) {
            Some(Ok(v @ digipology_kernel::Value::Object(_))) => {
                Some(from_player(&player, v.to_json()))
            }
            Some(Ok(digipology_kernel::Value::Null)) | None => None,
            Some(Ok(_)) => {
                self.fault("bot must return {type=…, payload=…} or nil; its answer is ignored");
                None
            }
            Some(Err(f)) => {
                let line = format!("bot failed, its answer ignored: {}", f.message);
                self.fault(&line);
                None
            }
        }
    }

    /// The game's own `legal_actions(seat)`, when it has one.
    fn listed_actions(&mut self, seat: &str) -> Option<Vec<Value>> {
        let state = self.kernel.state();
        if let Some(h) = self.scripts.as_deref_mut() {
            if h.defines("legal_actions") {
                return Some(
                    match h.query(
                        state,
                        "legal_actions",
                        &[digipology_kernel::Value::from(seat)],
                    ) {
                        Some(Ok(digipology_kernel::Value::Array(list))) => {
                            let all: Vec<Value> =
                                list.iter().map(digipology_kernel::Value::to_json).collect();
                            let n = all.len();
                            let kept: Vec<Value> = all
                                .into_iter()
                                .filter(|a| a.get("type").is_some_and(Value::is_string))
                                .collect();
                            if kept.len() < n {
                                self.fault("legal_actions listed something that is not {type=…, payload=…}; it is left out");
                            }
                            kept
                        }
                        Some(Ok(digipology_kernel::Value::Object(m))) if m.is_empty() => Vec::new(),
                        Some(Ok(_)) | None => {
                            self.fault("legal_actions must return a list of {type=…, payload=…}; none are listed");
                            Vec::new()
                        }
                        Some(Err(f)) => {
                            let line =
                                format!("legal_actions failed, none are listed: {}", f.message);
                            self.fault(&line);
                            Vec::new()
                        }
                    },
                );
            }
        }
        None
    }

    /// Writes `viewer`'s observation after every processed action to `out`,
    /// one JSON object a line.
    pub fn observe_to(&mut self, viewer: Viewer, out: Box<dyn Write>) {
        self.observations = Some((viewer, out));
    }

    /// Flushes the observations, if any.
    ///
    /// # Errors
    /// Writing failed.
    pub fn flush_observations(&mut self) -> std::io::Result<()> {
        match &mut self.observations {
            Some((_, out)) => out.flush(),
            None => Ok(()),
        }
    }

    /// The match's result as one line of JSON (`{"status":"match_over",
    /// "scores":…}` or `{"status":"match_aborted","reason":…}`), once it
    /// has one; with its `scoring` and `winners` when the config declares
    /// a scoring (docs/match.md, Results).
    pub fn match_result(&self) -> Option<String> {
        let layer = self.matchup.as_ref()?;
        let r = layer.book.result.as_ref()?;
        if layer.config.scoring.is_none() {
            return serde_json::to_string(r).ok();
        }
        let mut v = serde_json::to_value(r).ok()?;
        layer.config.rank_result(&mut v);
        Some(v.to_string())
    }

    /// [`Room::match_result`] as `viewer` may read it: why a match was
    /// aborted is the game's text (docs/observations.md, Text a game
    /// writes).
    pub fn match_result_for(&self, viewer: &Viewer) -> Option<String> {
        let layer = self.matchup.as_ref()?;
        let r = layer.book.result.as_ref()?;
        let mut v = serde_json::to_value(r).ok()?;
        layer.config.rank_result(&mut v);
        if let Some(reason) = v.get_mut("reason") {
            self.kernel.state().scrub_json(reason, viewer);
        }
        Some(v.to_string())
    }

    /// The room clock (ms).
    pub fn clock(&self) -> i64 {
        self.clock
    }
}

fn with_at(mut action: Value, at: i64) -> Value {
    if let Some(o) = action.as_object_mut() {
        o.insert("at".into(), json!(at));
    }
    action
}

/// An action as `player` would submit it.
fn as_player(player: &digipology_kernel::Id, candidate: &Candidate) -> Value {
    from_player(
        player,
        json!({"type": candidate.action_type(), "payload": candidate.payload()}),
    )
}

/// `action` (`{type, payload}`, as a game's function wrote it) from
/// `player`.
fn from_player(player: &digipology_kernel::Id, mut action: Value) -> Value {
    action["source"] = json!({"kind": "player", "playerId": player.to_string()});
    action
}
/// A refused dry run's reason: `script_error at FILE:LINE` for a script's
/// failure, else the rejection's code.
fn refusal(done: &Outcome) -> String {
    let failed = done.events.iter().find_map(|e| match &e.kind {
        digipology_kernel::EventKind::ScriptError { failure, .. } => Some(match failure.line {
            Some(l) => format!("script_error at {}:{l}", failure.script_id),
            None => format!("script_error in {}", failure.script_id),
        }),
        _ => None,
    });
    failed.unwrap_or_else(|| {
        done.rejection()
            .map_or_else(|| "refused".to_owned(), |r| r.code.as_str().to_owned())
    })
}
