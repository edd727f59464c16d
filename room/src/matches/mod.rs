//! The match layer (docs/match.md): seed 004's game contract over a room —
//! phases and their tools, participation, clocks (a seat's total, one
//! decision, a phase's deadline), resource balances with their resets,
//! metering, safe defaults, host events and the result.
//!
//! Time is data: the layer reads the room clock (each action's `at`) and
//! never a real clock. What it keeps (the "book") is canonical and goes
//! into the state under `match` after every action, so the state hash
//! covers it; everything it decides follows from the ordered stream, so a
//! replay of the record rebuilds it exactly.

pub mod config;
pub mod observation;
pub mod schema;

use std::collections::BTreeMap;

use digipology_kernel::value::{utf16_cmp, write_string, write_u64};
use digipology_kernel::{EventKind, State};
use digipology_lua::{LuaHost, PhaseAnswer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use config::{
    Closure, ConfigError, MatchConfig, Ownership, Reset, Scoring, Standing, Visibility,
};

/// Where a seat stands in the match (seed 004: participation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Participation {
    /// Expected to act: its clocks run.
    Acting,
    /// Not expected to act now (it may still use sensing tools).
    Waiting,
    /// Done for this match (not a match result).
    Finished,
}

impl Participation {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Participation::Acting => "acting",
            Participation::Waiting => "waiting",
            Participation::Finished => "finished",
        }
    }

    fn from_name(s: &str) -> Option<Participation> {
        match s {
            "acting" => Some(Participation::Acting),
            "waiting" => Some(Participation::Waiting),
            "finished" => Some(Participation::Finished),
            _ => None,
        }
    }
}

/// The match's result, once it has one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum MatchResult {
    /// Ended with scores.
    MatchOver {
        /// Seat → score (numbers as JSON writes them: `1`, not `1.0`).
        scores: BTreeMap<String, Value>,
    },
    /// Ended without a result.
    MatchAborted {
        /// Why.
        reason: String,
    },
}

/// One seat's bookkeeping.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeatBook {
    /// Where it stands.
    pub participation: Participation,
    /// Its total clock left as of `runningSince` (or now, when stopped);
    /// `None`: unlimited.
    pub clock_ms: Option<i64>,
    /// Since when its total clock runs (it is acting).
    pub running_since: Option<i64>,
    /// Its total clock ran out (raised once).
    pub time_exhausted: bool,
    /// Its last decision expired and no new one has begun: the next
    /// begins when it commits an accepted action or becomes acting again
    /// (so an idle seat's decision expires once, not every limit).
    pub decision_lapsed: bool,
    /// Since when its current decision runs.
    pub decision_since: Option<i64>,
    /// Resource balances by name.
    pub balances: BTreeMap<String, i64>,
}

/// The match's bookkeeping: canonical, under the state's `match` key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Book {
    /// The phase the game is in (`current_phase()`), if it names one.
    pub phase: Option<String>,
    /// When the current phase began.
    pub phase_since: i64,
    /// How many phases have begun (a phase that closes and goes on under
    /// the same name is a new one).
    pub phases_begun: u64,
    /// The result, once there is one.
    pub result: Option<MatchResult>,
    /// Seats by id.
    pub seats: BTreeMap<String, SeatBook>,
    /// The sensing tools' RNG (its four state words in hex), when the
    /// match offers sensing tools: seeded from the room's seed, apart from
    /// the game's RNG.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sense_rng: Option<Vec<String>>,
}

impl Book {
    /// Writes the book as canonical JSON (RFC 8785: keys in order, numbers
    /// as ECMAScript writes them) straight into `out`, with no value tree:
    /// the room does this after every action.
    pub fn write_canonical(&self, out: &mut String) {
        out.push_str("{\"phase\":");
        opt_str(self.phase.as_deref(), out);
        out.push_str(",\"phaseSince\":");
        int(self.phase_since, out);
        out.push_str(",\"phasesBegun\":");
        write_u64(self.phases_begun, out);
        out.push_str(",\"result\":");
        match &self.result {
            None => out.push_str("null"),
            Some(MatchResult::MatchOver { scores }) => {
                out.push_str("{\"scores\":");
                let v = digipology_kernel::Value::Object(
                    scores
                        .iter()
                        .filter_map(|(k, v)| {
                            Some((k.clone(), digipology_kernel::Value::from_json(v).ok()?))
                        })
                        .collect(),
                );
                v.write_canonical(out);
                out.push_str(",\"status\":\"match_over\"}");
            }
            Some(MatchResult::MatchAborted { reason }) => {
                out.push_str("{\"reason\":");
                write_string(reason, out);
                out.push_str(",\"status\":\"match_aborted\"}");
            }
        }
        out.push_str(",\"seats\":{");
        let mut seats: Vec<(&String, &SeatBook)> = self.seats.iter().collect();
        seats.sort_by(|a, b| utf16_cmp(a.0, b.0));
        for (i, (id, s)) in seats.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(id, out);
            out.push_str(":{\"balances\":{");
            // Resource names are ASCII (the config checks them): byte
            // order is canonical order.
            for (j, (name, n)) in s.balances.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                write_string(name, out);
                out.push(':');
                int(*n, out);
            }
            out.push_str("},\"clockMs\":");
            opt_int(s.clock_ms, out);
            out.push_str(",\"decisionLapsed\":");
            out.push_str(if s.decision_lapsed { "true" } else { "false" });
            out.push_str(",\"decisionSince\":");
            opt_int(s.decision_since, out);
            out.push_str(",\"participation\":\"");
            out.push_str(s.participation.as_str());
            out.push_str("\",\"runningSince\":");
            opt_int(s.running_since, out);
            out.push_str(",\"timeExhausted\":");
            out.push_str(if s.time_exhausted { "true" } else { "false" });
            out.push('}');
        }
        out.push('}');
        if let Some(words) = &self.sense_rng {
            out.push_str(",\"senseRng\":[");
            for (i, w) in words.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(w, out);
            }
            out.push(']');
        }
        out.push('}');
    }
}

fn int(n: i64, out: &mut String) {
    if n < 0 {
        out.push('-');
    }
    write_u64(n.unsigned_abs(), out);
}

fn opt_int(n: Option<i64>, out: &mut String) {
    match n {
        Some(n) => int(n, out),
        None => out.push_str("null"),
    }
}

fn opt_str(s: Option<&str>, out: &mut String) {
    match s {
        Some(s) => write_string(s, out),
        None => out.push_str("null"),
    }
}

/// A host event (seed 004: trusted expiry) the room sequences.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Expiry {
    /// When it is due.
    pub at: i64,
    /// Its order among expiries due at the same time.
    pub rank: u8,
    /// The seat's place in seat order (0 for a phase deadline).
    pub seat_index: usize,
    /// `player_time_exhausted`, `decision_expired` or `phase_deadline`.
    pub kind: &'static str,
    /// The seat, if any.
    pub seat: Option<String>,
}

/// How an input entered the room: the origin decides what the match layer
/// checks and charges (docs/match.md, Order of checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// From the input (a player, a host, a test).
    Input,
    /// A safe default the room committed for a seat: not checked against
    /// the phase, not metered.
    SafeDefault,
}

/// The match layer of a room.
#[derive(Clone, Debug)]
pub struct MatchLayer {
    /// The config it runs under.
    pub config: MatchConfig,
    /// Its bookkeeping.
    pub book: Book,
    /// Seat ids in the game's order.
    pub seat_order: Vec<String>,
}

/// What the layer wants done after an action (when the room runs its own
/// follow-ups, i.e. not while replaying a record).
#[derive(Clone, Debug, PartialEq)]
pub enum FollowUp {
    /// Raise a host event.
    HostEvent {
        /// Its kind.
        kind: &'static str,
        /// The seat.
        seat: Option<String>,
    },
    /// End the match with these scores (`is_terminal()` said so).
    Finish(Value),
}

impl MatchLayer {
    /// A layer for a room whose state lists the seats, all balances full,
    /// no phase yet, every seat waiting until the game starts.
    pub fn new(config: MatchConfig, state: &State) -> MatchLayer {
        let seat_order: Vec<String> = if state.seat_order.is_empty() {
            state.seats.keys().map(ToString::to_string).collect()
        } else {
            state.seat_order.iter().map(ToString::to_string).collect()
        };
        let seats = seat_order
            .iter()
            .map(|s| {
                (
                    s.clone(),
                    SeatBook {
                        participation: Participation::Waiting,
                        clock_ms: config.player_total_ms,
                        running_since: None,
                        time_exhausted: false,
                        decision_lapsed: false,
                        decision_since: None,
                        balances: config
                            .resources
                            .iter()
                            .map(|(k, r)| (k.clone(), r.amount))
                            .collect(),
                    },
                )
            })
            .collect();
        let sense_rng = (!config.sensing.is_empty()).then(|| {
            let rng = digipology_kernel::rng::Rng::from_seed(state.derived_seed("sensing"));
            rng_words(&rng)
        });
        MatchLayer {
            config,
            book: Book {
                phase: None,
                phase_since: 0,
                phases_begun: 0,
                result: None,
                seats,
                sense_rng,
            },
            seat_order,
        }
    }

    /// The book as the state keeps it: its canonical JSON text.
    pub fn book_text(&self) -> String {
        let mut out = String::with_capacity(256);
        self.book.write_canonical(&mut out);
        out
    }

    /// Takes the book back from a resumed state's `match` text.
    ///
    /// # Errors
    /// The state's `match` is not a book this layer wrote.
    pub fn restore(&mut self, text: &str) -> Result<(), String> {
        let book: Book = serde_json::from_str(text)
            .map_err(|e| format!("state.match is not a match book: {e}"))?;
        let mut again = String::new();
        book.write_canonical(&mut again);
        if again != text {
            return Err("state.match is not a match book this engine wrote".into());
        }
        self.book = book;
        Ok(())
    }

    /// Whether the match has ended.
    pub fn is_over(&self) -> bool {
        self.book.result.is_some()
    }

    /// A seat's balance of `resource` (0 when it has none).
    pub fn balance(&self, seat: &str, resource: &str) -> i64 {
        self.book
            .seats
            .get(seat)
            .and_then(|s| s.balances.get(resource))
            .copied()
            .unwrap_or(0)
    }

    /// Takes `cost` from a seat's `resource`, never below zero; the new
    /// balance.
    pub fn charge(&mut self, seat: &str, resource: &str, cost: i64) -> i64 {
        let Some(b) = self
            .book
            .seats
            .get_mut(seat)
            .and_then(|s| s.balances.get_mut(resource))
        else {
            return 0;
        };
        *b = b.saturating_sub(cost).max(0);
        *b
    }

    /// Every resource with reset `scope` of `seat` back to its amount.
    fn reset(&mut self, seat: Option<&str>, scope: Reset) {
        for (name, r) in &self.config.resources {
            if r.reset != scope {
                continue;
            }
            for (id, s) in &mut self.book.seats {
                if seat.is_none_or(|x| x == id) {
                    match s.balances.get_mut(name) {
                        Some(b) => *b = r.amount,
                        None => {
                            s.balances.insert(name.clone(), r.amount);
                        }
                    }
                }
            }
        }
    }

    /// A new decision for `seat` begins at `at`.
    fn new_decision(&mut self, seat: &str, at: i64) {
        if let Some(s) = self.book.seats.get_mut(seat) {
            s.decision_since = Some(at);
        }
        self.reset(Some(seat), Reset::Decision);
    }

    /// A new phase (instance) begins at `at`.
    fn new_phase(&mut self, phase: Option<String>, at: i64) {
        self.book.phase = phase;
        self.book.phase_since = at;
        self.book.phases_begun += 1;
        self.reset(None, Reset::Phase);
    }

    /// Stops a seat's total clock at `at`.
    fn stop_clock(s: &mut SeatBook, at: i64) {
        if let (Some(since), Some(left)) = (s.running_since, s.clock_ms) {
            s.clock_ms = Some(left.saturating_sub(at.saturating_sub(since)).max(0));
        }
        s.running_since = None;
    }

    /// The total clock a seat has left at `at`.
    pub fn clock_left(s: &SeatBook, at: i64) -> Option<i64> {
        let left = s.clock_ms?;
        Some(match s.running_since {
            Some(since) => left.saturating_sub(at.saturating_sub(since)).max(0),
            None => left,
        })
    }

    /// The earliest expiry due, if any.
    pub fn next_expiry(&self) -> Option<Expiry> {
        if self.is_over() {
            return None;
        }
        let mut best: Option<Expiry> = None;
        let mut offer = |e: Expiry| {
            // A deadline past the end of time never comes.
            if e.at == i64::MAX {
                return;
            }
            if best.as_ref().is_none_or(|b| e < *b) {
                best = Some(e);
            }
        };
        for (i, seat) in self.seat_order.iter().enumerate() {
            let Some(s) = self.book.seats.get(seat) else {
                continue;
            };
            if let (Some(since), Some(left), false) =
                (s.running_since, s.clock_ms, s.time_exhausted)
            {
                offer(Expiry {
                    at: since.saturating_add(left),
                    rank: 0,
                    seat_index: i,
                    kind: "player_time_exhausted",
                    seat: Some(seat.clone()),
                });
            }
            if let (Some(since), Some(limit)) = (s.decision_since, self.config.decision_limit_ms) {
                offer(Expiry {
                    at: since.saturating_add(limit),
                    rank: 1,
                    seat_index: i,
                    kind: "decision_expired",
                    seat: Some(seat.clone()),
                });
            }
        }
        if let Some(limit) = self
            .book
            .phase
            .as_ref()
            .and_then(|p| self.config.phase_limits.get(p))
        {
            offer(Expiry {
                at: self.book.phase_since.saturating_add(limit.ms),
                rank: 2,
                seat_index: 0,
                kind: "phase_deadline",
                seat: None,
            });
        }
        best
    }

    /// Seats acting now, in seat order.
    pub fn acting(&self) -> Vec<String> {
        self.seat_order
            .iter()
            .filter(|s| {
                self.book
                    .seats
                    .get(*s)
                    .is_some_and(|b| b.participation == Participation::Acting)
            })
            .cloned()
            .collect()
    }

    /// Brings the book up to date after a processed action at `at`: what
    /// its events say (a result, a host event), a decision the actor's
    /// accepted action ended, then the phase and every seat's
    /// participation as the game now answers them. Returns the
    /// follow-ups the room should sequence next.
    pub fn after_action(
        &mut self,
        at: i64,
        processed: Processed<'_>,
        state: &State,
        mut host: Option<&mut LuaHost>,
        notices: &mut Vec<String>,
    ) -> Vec<FollowUp> {
        let closed_phase = self.read_events(processed.events, at);
        if self.is_over() {
            for s in self.book.seats.values_mut() {
                Self::stop_clock(s, at);
                s.participation = Participation::Finished;
                s.decision_since = None;
            }
            return Vec::new();
        }
        // A rejection changed nothing the game's answers depend on.
        if !processed.accepted {
            return Vec::new();
        }
        if let Some(s) = processed
            .seat
            .and_then(|seat| self.book.seats.get_mut(seat))
        {
            s.decision_since = None;
            s.decision_lapsed = false;
        }
        // Every question in one call into Lua; one by one only when one
        // of them failed (to say which).
        let ready_asked = self
            .config
            .phase_limits
            .values()
            .any(|l| l.closure == Closure::ReadyOrDeadline);
        let mut ask = Ask {
            answers: host.as_deref_mut().and_then(|h| {
                h.match_step(
                    state,
                    (ready_asked && processed.autofire, processed.autofire),
                    self.book.phase.as_deref(),
                    &self.seat_order,
                )
            }),
            host,
        };
        let phase = self.phase_answer(state, &mut ask, notices);
        if closed_phase || phase != self.book.phase {
            self.new_phase(phase, at);
        }
        self.update_participation(at, state, &mut ask, notices);
        if processed.autofire {
            self.follow_ups(closed_phase, state, &mut ask, notices)
        } else {
            Vec::new()
        }
    }

    /// What an action's events tell the book: a result, a host event.
    /// Whether a phase closed.
    fn read_events(&mut self, events: &[digipology_kernel::Event], at: i64) -> bool {
        let mut closed_phase = false;
        for e in events {
            match &e.kind {
                EventKind::MatchOver { scores } if self.book.result.is_none() => {
                    let scores = match scores {
                        digipology_kernel::Value::Object(m) => m
                            .iter()
                            .filter(|(_, v)| matches!(v, digipology_kernel::Value::Number(_)))
                            .map(|(k, v)| (k.clone(), v.to_json()))
                            .collect(),
                        _ => BTreeMap::new(),
                    };
                    self.book.result = Some(MatchResult::MatchOver { scores });
                }
                EventKind::MatchAborted { reason } if self.book.result.is_none() => {
                    self.book.result = Some(MatchResult::MatchAborted {
                        reason: reason.clone(),
                    });
                }
                EventKind::MatchHostEvent { kind, seat, .. } => {
                    self.on_host_event(kind, seat.as_deref(), at);
                    closed_phase |= matches!(kind.as_str(), "phase_deadline" | "phase_ready");
                }
                _ => {}
            }
        }
        closed_phase
    }

    /// The phase the game names now (`current_phase()`); on failure, the
    /// phase stays as it was.
    fn phase_answer(
        &self,
        state: &State,
        ask: &mut Ask<'_>,
        notices: &mut Vec<String>,
    ) -> Option<String> {
        let answer = match (&ask.answers, ask.host.as_deref_mut()) {
            (Some(a), _) => match &a.phase {
                None | Some(PhaseAnswer::None) => None,
                Some(PhaseAnswer::Unchanged) => return self.book.phase.clone(),
                Some(PhaseAnswer::Named(p)) => return Some(p.clone()),
            },
            (None, Some(h)) => h.query(state, "current_phase", &[]),
            (None, None) => None,
        };
        match answer {
            Some(Ok(digipology_kernel::Value::String(p))) => Some(p),
            Some(Ok(_)) | None => None,
            Some(Err(f)) => {
                notices.push(format!(
                    "current_phase failed, the phase is unchanged: {}",
                    f.message
                ));
                self.book.phase.clone()
            }
        }
    }

    /// Every seat's participation as the game answers it now, with the
    /// clocks that start and stop with it.
    fn update_participation(
        &mut self,
        at: i64,
        state: &State,
        ask: &mut Ask<'_>,
        notices: &mut Vec<String>,
    ) {
        // Taken out for the loop (no copy per action), put back after.
        let order = std::mem::take(&mut self.seat_order);
        for (i, seat) in order.iter().enumerate() {
            let seat = seat.as_str();
            // The game's answer (the one-call answers are checked names
            // already), else the default rule.
            let answer = match (&ask.answers, ask.host.as_deref_mut()) {
                (Some(a), _) => a.participation.as_ref().map(|list| {
                    let name = list.get(i).copied().unwrap_or("waiting");
                    Participation::from_name(name).unwrap_or(Participation::Waiting)
                }),
                (None, Some(h)) => h
                    .query(
                        state,
                        "participation",
                        &[digipology_kernel::Value::from(seat)],
                    )
                    .map(|a| participation_from(seat, a, notices)),
                (None, None) => None,
            };
            let p = answer.unwrap_or_else(|| default_participation(seat, state));
            let Some(s) = self.book.seats.get_mut(seat) else {
                continue;
            };
            let was = s.participation;
            s.participation = p;
            match (was == Participation::Acting, p == Participation::Acting) {
                (true, false) => {
                    Self::stop_clock(s, at);
                    s.decision_since = None;
                    s.decision_lapsed = false;
                }
                (false, true) => {
                    if !s.time_exhausted && s.clock_ms.is_some() {
                        s.running_since = Some(at);
                    }
                    s.decision_lapsed = false;
                    self.new_decision(seat, at);
                }
                (true, true) if s.decision_since.is_none() && !s.decision_lapsed => {
                    self.new_decision(seat, at);
                }
                _ => {}
            }
        }
        self.seat_order = order;
    }

    /// What the room sequences after an accepted action: `phase_ready`
    /// when a ready_or_deadline phase is ready, the result when
    /// `is_terminal()` says so.
    fn follow_ups(
        &self,
        closed_phase: bool,
        state: &State,
        ask: &mut Ask<'_>,
        notices: &mut Vec<String>,
    ) -> Vec<FollowUp> {
        let mut follow = Vec::new();
        let Some(h) = ask.host.as_deref_mut() else {
            return follow;
        };
        let ready_closure = self
            .book
            .phase
            .as_ref()
            .and_then(|p| self.config.phase_limits.get(p))
            .is_some_and(|l| l.closure == Closure::ReadyOrDeadline);
        let ready = match &ask.answers {
            _ if !ready_closure || closed_phase => None,
            Some(a) => a.ready.map(|r| Ok(digipology_kernel::Value::Bool(r))),
            None => h.query(state, "is_ready", &[]),
        };
        match ready {
            Some(Ok(v)) if truthy(&v) => follow.push(FollowUp::HostEvent {
                kind: "phase_ready",
                seat: None,
            }),
            Some(Err(f)) => notices.push(format!("is_ready failed: {}", f.message)),
            _ => {}
        }
        let terminal = match &ask.answers {
            Some(a) => a.terminal.map(|t| Ok(digipology_kernel::Value::Bool(t))),
            None => h.query(state, "is_terminal", &[]),
        };
        match terminal {
            Some(Ok(v)) if truthy(&v) => {
                follow.push(FollowUp::Finish(scores(state, h, notices)));
            }
            Some(Err(f)) => notices.push(format!("is_terminal failed: {}", f.message)),
            _ => {}
        }
        follow
    }

    /// A host event whose action was rejected (the game's handler failed):
    /// what it does to the book happens all the same — the clock ran out,
    /// the phase closed — so the same expiry is not raised again at once.
    pub fn host_event_refused(&mut self, kind: &str, seat: Option<&str>, at: i64) {
        self.on_host_event(kind, seat, at);
        if matches!(kind, "phase_deadline" | "phase_ready") {
            self.new_phase(self.book.phase.clone(), at);
        }
        if let Some(s) = seat.and_then(|s| self.book.seats.get_mut(s)) {
            let lapsed = s.decision_lapsed;
            if s.participation == Participation::Acting && s.decision_since.is_none() && !lapsed {
                self.new_decision(seat.unwrap_or_default(), at);
            }
        }
    }

    /// What a host event does to the book (whether or not the game's
    /// handler succeeded: the clock ran out either way).
    fn on_host_event(&mut self, kind: &str, seat: Option<&str>, at: i64) {
        let Some(seat) = seat else { return };
        let Some(s) = self.book.seats.get_mut(seat) else {
            return;
        };
        match kind {
            "player_time_exhausted" => {
                Self::stop_clock(s, at);
                s.clock_ms = Some(0);
                s.time_exhausted = true;
            }
            "decision_expired" => {
                // The expired decision is over; the next begins with the
                // seat's next accepted action (its safe default, say).
                s.decision_since = None;
                s.decision_lapsed = true;
            }
            _ => {}
        }
    }

    /// The safe default of a seat: the game's `safe_default(seat)` (an
    /// action `{type, payload}` or nil), else the answer to its first open
    /// prompt (by id) that has a default.
    pub fn safe_default(
        seat: &str,
        state: &State,
        host: Option<&mut LuaHost>,
        notices: &mut Vec<String>,
    ) -> Option<(String, Value)> {
        if let Some(h) = host {
            if h.defines("safe_default") {
                return match h.query(
                    state,
                    "safe_default",
                    &[digipology_kernel::Value::from(seat)],
                ) {
                    Some(Ok(digipology_kernel::Value::Null)) | None => None,
                    Some(Ok(v)) => {
                        let json = v.to_json();
                        match (
                            json.get("type").and_then(Value::as_str),
                            json.get("payload"),
                        ) {
                            (Some(t), Some(p)) => Some((t.to_owned(), p.clone())),
                            (Some(t), None) => Some((t.to_owned(), serde_json::json!({}))),
                            _ => {
                                notices.push(format!("safe_default(\"{seat}\") must answer {{type=…, payload=…}} or nil; nothing was committed"));
                                None
                            }
                        }
                    }
                    Some(Err(f)) => {
                        notices.push(format!(
                            "safe_default failed, nothing was committed: {}",
                            f.message
                        ));
                        None
                    }
                };
            }
        }
        let player = state.seats.get(seat).and_then(Option::as_ref)?;
        state
            .prompts
            .iter()
            .find(|(_, p)| p.is_open() && &p.player_id == player && p.default != digipology_kernel::Value::Null)
            .map(|(id, p)| {
                (
                    "prompt.respond".to_owned(),
                    serde_json::json!({"promptId": id.to_string(), "response": p.default.to_json()}),
                )
            })
    }
}

/// Where the game's answers come from after an action: all of them from
/// one call into Lua, or (when that failed) one query at a time.
struct Ask<'h> {
    answers: Option<digipology_lua::MatchAnswers>,
    host: Option<&'h mut LuaHost>,
}

/// A seat's participation from the game's answer to `participation(seat)`
/// (anything but the three names is a notice, and waiting).
fn participation_from(
    seat: &str,
    answer: Result<digipology_kernel::Value, digipology_kernel::ScriptFailure>,
    notices: &mut Vec<String>,
) -> Participation {
    match answer {
        Ok(digipology_kernel::Value::String(p)) => Participation::from_name(&p).unwrap_or_else(|| {
            notices.push(format!("participation(\"{seat}\") answered \"{p}\", not acting, waiting or finished; the seat is waiting"));
            Participation::Waiting
        }),
        Ok(_) => {
            notices.push(format!("participation(\"{seat}\") must answer \"acting\", \"waiting\" or \"finished\"; the seat is waiting"));
            Participation::Waiting
        }
        Err(f) => {
            notices.push(format!(
                "participation failed, the seat is waiting: {}",
                f.message
            ));
            Participation::Waiting
        }
    }
}

/// A seat's participation when the game defines no `participation`:
/// acting when it has an open prompt, waiting when another seat has one
/// (or the seat is empty), acting when no prompt is open anywhere.
fn default_participation(seat: &str, state: &State) -> Participation {
    let player = state.seats.get(seat).and_then(Option::as_ref);
    let mut any_open = false;
    for p in state.prompts.values().filter(|p| p.is_open()) {
        if Some(&p.player_id) == player {
            return Participation::Acting;
        }
        any_open = true;
    }
    if any_open || player.is_none() {
        Participation::Waiting
    } else {
        Participation::Acting
    }
}

/// The game's `score()`: a table of seat = number (empty when the game
/// defines none, or when it fails — said in a notice).
fn scores(state: &State, h: &mut LuaHost, notices: &mut Vec<String>) -> Value {
    match h.query(state, "score", &[]) {
        Some(Ok(digipology_kernel::Value::Object(m))) => {
            let mut out = serde_json::Map::new();
            for (seat, v) in m {
                match v {
                    digipology_kernel::Value::Number(_)
                        if state.seats.contains_key(seat.as_str()) =>
                    {
                        out.insert(seat, v.to_json());
                    }
                    _ => notices.push(format!(
                        "score() gave {seat} = {}: only seats of the game with a number count",
                        v.to_canonical_json()
                    )),
                }
            }
            Value::Object(out)
        }
        Some(Ok(digipology_kernel::Value::Null)) | None => serde_json::json!({}),
        Some(Ok(_)) => {
            notices
                .push("score() must return a table of seat = number; the scores are empty".into());
            serde_json::json!({})
        }
        Some(Err(f)) => {
            notices.push(format!("score failed, the scores are empty: {}", f.message));
            serde_json::json!({})
        }
    }
}

/// The refusal of everything after the result (`match_over`).
pub fn over() -> digipology_kernel::Rejection {
    digipology_kernel::Rejection::new(
        digipology_kernel::RejectCode::MatchOver,
        "the match has ended: no more actions are accepted",
    )
}

/// A generator's state words as the book keeps them.
pub fn rng_words(rng: &digipology_kernel::rng::Rng) -> Vec<String> {
    rng.words().iter().map(|w| format!("{w:016x}")).collect()
}

/// A generator back from the book's words (`None` when they are not four
/// 16-digit hex words).
pub fn rng_from_words(words: &[String]) -> Option<digipology_kernel::rng::Rng> {
    let mut s = [0u64; 4];
    if words.len() != 4 {
        return None;
    }
    for (w, text) in s.iter_mut().zip(words) {
        *w = u64::from_str_radix(text, 16).ok()?;
    }
    Some(digipology_kernel::rng::Rng::from_words(s))
}

/// The version of the public manifest's shape.
pub const MANIFEST_VERSION: u64 = 1;

/// The game module functions a game may define (docs/match.md).
pub const GAME_FUNCTIONS: [&str; 12] = [
    "current_phase",
    "is_ready",
    "participation",
    "safe_default",
    "on_host_event",
    "legal_actions",
    "observe",
    "public_view",
    "is_terminal",
    "score",
    "can_act",
    "bot",
];

/// A game's public manifest (seed 004: manifest): what a program needs to
/// discover how to play it — id, seats, the match defaults, phases, the
/// JSON Schema of every action a seat may submit (its tools), the sensing
/// tools and which game functions the scripts define.
pub fn manifest(package: &crate::Package, room: &crate::Room) -> Value {
    let get = |k: &str| package.json.get(k).cloned().unwrap_or(Value::Null);
    let layer = room.match_layer();
    let phases = layer.and_then(|m| m.config.phases.clone());
    let sensing = layer.is_some_and(|m| !m.config.sensing.is_empty());
    let sorting = room.kernel().state().api_version >= 3;
    let mut types: Vec<&str> = schema::player_action_types();
    types.retain(|t| match (*t, &phases) {
        ("match.sense", _) => sensing,
        // Players sort their hands from API 3 (docs/lua-api.md, API versions).
        ("container.reorder", _) if !sorting => false,
        (_, Some(p)) => p.values().any(|list| list.iter().any(|x| x == t)),
        (_, None) => true,
    });
    let tools: serde_json::Map<String, Value> = types
        .iter()
        .filter_map(|t| schema::action_schema(t).map(|s| ((*t).to_owned(), s)))
        .collect();
    let sense_functions = layer
        .map(|m| {
            m.config
                .sensing
                .keys()
                .map(|n| format!("sense_{n}"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let defined: Vec<&str> = GAME_FUNCTIONS
        .iter()
        .copied()
        .chain(sense_functions.iter().map(String::as_str))
        .filter(|f| room.scripts().is_some_and(|h| h.defines(f)))
        .collect();
    serde_json::json!({
        "manifestVersion": MANIFEST_VERSION,
        "id": get("id"),
        "name": get("name"),
        "version": get("version"),
        "description": get("description"),
        "seats": get("seats"),
        "defaultSeats": package.seats().len(),
        "settings": get("settings"),
        "match": layer.map(|m| m.config.to_json()),
        "phases": phases,
        "tools": tools,
        "sensing": layer.map(|m| m.config.sensing.keys().cloned().collect::<Vec<_>>()).unwrap_or_default(),
        "functions": defined,
        "observation": ["seq", "seat", "phase", "participation", "clocks", "resources", "view", "legalActions", "result"],
    })
}

/// What the room tells the layer about one processed action.
pub struct Processed<'a> {
    /// Its events.
    pub events: &'a [digipology_kernel::Event],
    /// Whether it committed.
    pub accepted: bool,
    /// The seat of its player, if a seated player sent it.
    pub seat: Option<&'a str>,
    /// Whether the room sequences its own follow-ups (not in a replay).
    pub autofire: bool,
}

/// A match function's yes or no as Lua reads a condition: anything but
/// nil (`Null`) and false is yes (`return storage.winner` ends the match).
fn truthy(v: &digipology_kernel::Value) -> bool {
    !matches!(
        v,
        digipology_kernel::Value::Null | digipology_kernel::Value::Bool(false)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The book written by hand is the canonical JSON (RFC 8785) of the
    /// same book as a value: sorted keys, seats in UTF-16 order, numbers
    /// as ECMAScript writes them.
    #[test]
    fn the_hand_written_book_is_canonical_json() {
        let seat = |p, clock, since| SeatBook {
            participation: p,
            clock_ms: clock,
            running_since: since,
            time_exhausted: false,
            decision_lapsed: true,
            decision_since: Some(-5),
            balances: [("moves".to_owned(), 0), ("a-b_c".to_owned(), 1_000_000_000)]
                .into_iter()
                .collect(),
        };
        let mut scores = BTreeMap::new();
        scores.insert("\u{e000}x".to_owned(), serde_json::json!(0.5));
        scores.insert("b".to_owned(), serde_json::json!(-2));
        for result in [
            None,
            Some(MatchResult::MatchOver { scores }),
            Some(MatchResult::MatchAborted {
                reason: "a \"quoted\" reason ✓".into(),
            }),
        ] {
            let book = Book {
                phase: Some("play".into()),
                phase_since: 9_007_199_254_740_991,
                phases_begun: 3,
                result,
                seats: [
                    (
                        "\u{e000}x".to_owned(),
                        seat(Participation::Acting, Some(60_000), Some(12)),
                    ),
                    (
                        "\u{10000}".to_owned(),
                        seat(Participation::Waiting, None, None),
                    ),
                    ("b".to_owned(), seat(Participation::Finished, Some(0), None)),
                ]
                .into_iter()
                .collect(),
                sense_rng: Some(vec!["00ff".into(); 4]),
            };
            let mut hand = String::new();
            book.write_canonical(&mut hand);
            let json = serde_json::to_value(&book).expect("a book serializes");
            let value = digipology_kernel::Value::from_json(&json).expect("a canonical value");
            assert_eq!(hand, value.to_canonical_json());
        }
    }
}
