//! The headless room host: seats players, keeps the virtual clock, delivers
//! due timers, feeds ordered actions to the kernel, and streams events (and
//! optionally a replayable record) out as JSONL.
//!
//! Time: every action may carry `at` (integer milliseconds of virtual room
//! time). The clock is the largest `at` seen; an action without `at` happens
//! at the current clock (and is recorded with it). A timer registered while
//! the clock reads `c` with delay `d` is due at `c + ceil(d)`. Before an
//! action whose `at` is later than a due time, the host sequences one
//! `system.timer_fire` per due timer, in due-time order then timer id, each
//! at its due time. At the end of the input every pending timer fires the
//! same way (bounded by `fires_max`), so a game that runs on timers alone
//! plays to the end. The host never waits in real time.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};

use digipology_kernel::{
    Action, EventKind, Kernel, Outcome, RejectCode, Rejection, ScriptHost, State, Viewer,
};
use digipology_lua::LuaHost;
use serde_json::{json, Value};

use crate::jsonl::{Line, Lines, INPUT_BUFFER_BYTES, LINE_BYTES_MAX};
use crate::record::{self, Given, RECORD_VERSION};

/// The script host of a room whose game has no scripts: no guard, no
/// handler — and a timer that fires (one a save game or an edited state
/// brought along) is the script error it is in a game with scripts whose
/// callback is gone, not a fire that nothing heard.
#[derive(Clone, Copy, Debug, Default)]
struct Scriptless;

impl ScriptHost for Scriptless {
    fn wants_event(&mut self, event_type: &'static str) -> bool {
        event_type == "timer.fired"
    }

    fn on_event(
        &mut self,
        _ctx: &mut digipology_kernel::ScriptCtx<'_, '_>,
        event: &digipology_kernel::Event,
    ) -> Result<(), digipology_kernel::ScriptFailure> {
        let EventKind::TimerFired { target, .. } = &event.kind else {
            return Ok(());
        };
        Err(digipology_kernel::ScriptFailure {
            script_id: target.script_id.clone(),
            binding_id: target.binding_id.clone(),
            function: target.callback.clone(),
            line: None,
            message: format!(
                "callback '{}': script \"{}\" binding \"{}\" no longer exists (the game has no scripts)",
                target.callback, target.script_id, target.binding_id
            ),
            kind: digipology_kernel::ScriptErrorKind::Runtime,
        })
    }
}

/// Where a room's notices go (script `print` lines, bounds reached).
pub type NoticeHook = Box<dyn FnMut(&str)>;

/// Version of the save-game format ([`Room::save_json`]).
pub const SAVE_VERSION: u64 = 1;

/// Default bound on timer fires after the input ends.
pub const END_FIRES_MAX: u64 = 10_000;

/// What one processed input was: a parsed action (as processed, with its
/// `at`), or a line that was not one (kept as text, at most 4 KiB, so a
/// replay consumes it the same way). Kept apart so an action whose own
/// JSON has a `raw` key is never mistaken for a raw line.
#[derive(Clone, Debug)]
pub enum Input {
    /// A parsed action.
    Action(Value),
    /// A line that was not an action.
    Raw(String),
}

/// One processed action, kept for `watch` (replays after a change).
#[derive(Clone, Debug)]
pub struct Step {
    /// The input as processed.
    pub input: Input,
    /// The state hash after it.
    pub hash: String,
    /// Its event lines.
    pub events: Vec<String>,
    /// The parts of the state it changed, by path, with their short
    /// digests after it (`None`: removed).
    pub changed: BTreeMap<String, Option<String>>,
}

/// A running room.
pub struct Room {
    pub(crate) kernel: Kernel,
    /// One event line at a time is written through this buffer (reused).
    line_buf: String,
    /// Whether every action's events are flushed as it finishes (off while
    /// `run_lines` flushes per batch of input instead).
    flush_each: bool,
    pub(crate) scripts: Option<Box<LuaHost>>,
    no_scripts: Scriptless,
    pub(crate) clock: i64,
    due: BTreeSet<(i64, String)>,
    due_of: BTreeMap<String, i64>,
    record: Option<Box<dyn Write>>,
    /// One record line at a time is written through this buffer (reused).
    record_buf: String,
    /// Every processed action, when kept ([`Room::keep_history`]).
    history: Option<Vec<Step>>,
    /// Whether due timers fire on their own (off when replaying a record,
    /// which already holds every fire).
    pub autofire: bool,
    /// Actions processed so far.
    pub processed: u64,
    /// Of those, rejected.
    pub rejected: u64,
    /// Most timer fires after the end of the input.
    pub fires_max: u64,
    /// Where notices go; without a hook they are kept (see
    /// [`Room::take_notices`]).
    notice_hook: Option<NoticeHook>,
    notices: Vec<String>,
    /// The game's match functions that failed or answered wrongly since
    /// the last [`Room::take_faults`] (also noticed).
    faults: Vec<String>,
    /// The seats the room played a safe default for since the last
    /// [`Room::take_safe_defaults`] (a decision or phase that ran out,
    /// retries used up).
    safe_defaults: Vec<String>,
    /// The host events (kind, seat) whose action the game's handler failed
    /// since the last [`Room::take_refused_host_events`].
    host_events_refused: Vec<(String, String)>,
    /// Whose view the events are written in (docs/observations.md): the
    /// referee's (everything) unless set. History and records keep the
    /// referee's.
    pub view: Viewer,
    /// Every event since the last [`Room::take_events`], when kept.
    kept_events: Option<Vec<digipology_kernel::Event>>,
    /// Which events are kept (all without one: [`Room::keep_events_of`]).
    kept_kinds: Option<fn(&digipology_kernel::EventKind) -> bool>,
    /// Whether events are written out as lines (off: [`Room::no_event_lines`]).
    event_lines: bool,
    /// The match layer, when the room runs a match (docs/match.md).
    pub(crate) matchup: Option<Box<crate::matches::MatchLayer>>,
    /// Where each processed action's observation goes, and whose
    /// ([`Room::observe_to`]).
    pub(crate) observations: Option<(Viewer, Box<dyn Write>)>,
    /// The seat whose retries a phase refusal just used up (from the
    /// checks before the kernel to the follow-ups after it).
    pub(crate) gate_exhausted: Option<String>,
    /// How the input being processed entered the room.
    pub(crate) origin: crate::matches::Origin,
}

impl Room {
    /// A room over a starting state, with scripts when there are any.
    pub fn new(state: State, scripts: Option<LuaHost>) -> Room {
        Room::with_scripts(state, scripts.map(Box::new))
    }

    fn with_scripts(state: State, scripts: Option<Box<LuaHost>>) -> Room {
        Room {
            kernel: Kernel::new(state),
            scripts,
            no_scripts: Scriptless,
            clock: 0,
            due: BTreeSet::new(),
            due_of: BTreeMap::new(),
            record: None,
            record_buf: String::new(),
            history: None,
            autofire: true,
            processed: 0,
            rejected: 0,
            fires_max: END_FIRES_MAX,
            notice_hook: None,
            notices: Vec::new(),
            faults: Vec::new(),
            safe_defaults: Vec::new(),
            host_events_refused: Vec::new(),
            line_buf: String::new(),
            flush_each: true,
            view: Viewer::Referee,
            kept_events: None,
            kept_kinds: None,
            event_lines: true,
            matchup: None,
            observations: None,
            gate_exhausted: None,
            origin: crate::matches::Origin::Input,
        }
    }

    /// Writes no event lines from now on (the writer given to each call
    /// gets nothing): for a host that reads the events it keeps
    /// ([`Room::keep_events`]) and nothing else, like `simulate`.
    pub fn no_event_lines(&mut self) {
        self.event_lines = false;
    }

    /// Starts over from `state` (a table built from the same game, not
    /// started yet) with the same scripts and match config: what
    /// `simulate` does between matches instead of building a new room.
    /// The room is a new one around the same scripts, keeping how it was
    /// set up to run (autofire, catch-up bound, whose view, which events
    /// it keeps and writes); records, observations and the notice hook
    /// are dropped. The scripts' own Lua values (tables and captured
    /// locals, which the docs ask scripts to treat as constants) are kept
    /// as they are.
    ///
    /// # Errors
    /// The scripts could not forget the last match, or the match config
    /// no longer fits the table.
    pub fn reset(&mut self, state: State) -> Result<(), String> {
        let scripts = self.scripts.take();
        if let Some(h) = &scripts {
            h.forget_match()
                .map_err(|e| format!("cannot reset the scripts: {e}"))?;
        }
        let mut fresh = Room::with_scripts(state, scripts);
        fresh.set_bytes_max(self.kernel.bytes_max());
        fresh.autofire = self.autofire;
        fresh.fires_max = self.fires_max;
        fresh.flush_each = self.flush_each;
        fresh.view = self.view.clone();
        fresh.event_lines = self.event_lines;
        fresh.history = self.history.as_ref().map(|_| Vec::new());
        fresh.kept_events = self.kept_events.as_ref().map(|_| Vec::new());
        fresh.kept_kinds = self.kept_kinds;
        let config = self.matchup.take().map(|m| m.config);
        *self = fresh;
        match config {
            Some(c) => self.set_match(c),
            None => Ok(()),
        }
    }

    /// Also writes a replayable record to `out`: first `header` with the
    /// record version and the starting state's digests added, then every
    /// processed action with the state hash after it and the parts of the
    /// state it changed. The kernel tracks digests from now on, so a
    /// record line costs what its action touched.
    ///
    /// # Errors
    /// Writing the header failed.
    pub fn record_to(&mut self, mut out: Box<dyn Write>, mut header: Value) -> std::io::Result<()> {
        self.kernel.track_digests();
        header["record"] = json!(RECORD_VERSION);
        header["digest"] = json!(self.kernel.digest_map());
        out.write_all(header.to_string().as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .map_err(record::failed)?;
        self.record = Some(out);
        Ok(())
    }

    /// Keeps every processed action from now on (for `watch`), with its
    /// events, the state hash after it and the parts it changed.
    pub fn keep_history(&mut self) {
        self.kernel.track_digests();
        self.history = Some(Vec::new());
    }

    /// The actions kept since [`Room::keep_history`].
    pub fn history(&self) -> &[Step] {
        self.history.as_deref().unwrap_or_default()
    }

    /// Keeps the state hash up to date per action (see
    /// [`Kernel::track_digests`]): for a caller that asks for it after
    /// every action, such as a replay.
    pub fn track_digests(&mut self) {
        self.kernel.track_digests();
    }

    /// The kernel and the script host, borrowed together.
    pub(crate) fn parts(&mut self) -> (&mut Kernel, &mut dyn ScriptHost) {
        match &mut self.scripts {
            Some(h) => (&mut self.kernel, h.as_mut()),
            None => (&mut self.kernel, &mut self.no_scripts),
        }
    }

    /// Script `print` output since the last call (not canonical).
    pub fn take_log(&mut self) -> Vec<String> {
        self.scripts
            .as_ref()
            .map(|h| h.take_log())
            .unwrap_or_default()
    }

    /// Replaces the script runtime (hot reload): the canonical state stays.
    pub fn replace_scripts(&mut self, host: Option<LuaHost>) {
        self.scripts = host.map(Box::new);
    }

    /// A save game of this room, as canonical JSON: its canonical state and
    /// what only the room knows (the clock and each pending timer's due
    /// time), so [`Room::resume`] continues it exactly. Written straight
    /// from the canonical state, whatever its depth.
    pub fn save_json(&self, game_id: &str) -> String {
        let timers = serde_json::to_string(&self.due_of).unwrap_or_else(|_| "{}".into());
        let mut key = String::with_capacity(64);
        digipology_kernel::digest::write_hex(&self.kernel.state().alias_key, &mut key);
        // The match config the room runs under, so a resume keeps it.
        let matchup = match &self.matchup {
            Some(m) => format!(
                ",\"match\":{}",
                digipology_kernel::Value::from_json(&m.config.to_json())
                    .map(|v| v.to_canonical_json())
                    .unwrap_or_else(|_| "null".into())
            ),
            None => String::new(),
        };
        format!(
            "{{\"aliasKey\":\"{key}\",\"clock\":{},\"game\":{}{matchup},\"save\":{SAVE_VERSION},\"state\":{},\"timers\":{timers}}}",
            self.clock,
            Value::from(game_id),
            self.kernel.state().canonical_json()
        )
    }

    /// Sets the clock and the pending timers from a save (the state itself
    /// was restored when the room was built).
    ///
    /// A scheduled timer the save does not list is one whose fire failed
    /// (its callback raised an error, so the fire was rolled back): the
    /// room never fires it again, resumed or not.
    ///
    /// A listed timer may be overdue (a catch-up stopped at `fires_max`
    /// left it pending); it fires at the next catch-up, as it would have.
    ///
    /// # Errors
    /// A listed timer is not scheduled in the state.
    pub fn resume(&mut self, clock: i64, timers: &BTreeMap<String, i64>) -> Result<(), String> {
        for id in timers.keys() {
            let scheduled = self.kernel.state().timers.contains_key(id.as_str());
            if !scheduled {
                return Err(format!(
                    "timers[\"{id}\"]: the state has no scheduled timer with that id"
                ));
            }
        }
        self.clock = clock;
        for (id, due) in timers {
            self.due_of.insert(id.clone(), *due);
            self.due.insert((*due, id.clone()));
        }
        Ok(())
    }

    /// Sends every later notice (script `print` lines, bounds reached) to
    /// `hook` instead of keeping it.
    pub fn on_notice(&mut self, hook: NoticeHook) {
        self.notice_hook = Some(hook);
    }

    /// Notices kept since the last call (when no hook is set; at most
    /// 10,000 are kept).
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// The game's match functions (`score`, `participation`, `bot`, …)
    /// that failed or answered what they may not since the last call: the
    /// room went on without their answer (at most 10,000 are kept).
    pub fn take_faults(&mut self) -> Vec<String> {
        std::mem::take(&mut self.faults)
    }

    /// The seats the room played a safe default for on its own since the
    /// last call, one entry per default (docs/match.md, Safe defaults).
    pub fn take_safe_defaults(&mut self) -> Vec<String> {
        std::mem::take(&mut self.safe_defaults)
    }

    /// The host events (kind, and seat or `-`) whose action was rejected
    /// since the last call — the game's `on_host_event` failed, yet the
    /// clock ran out all the same (docs/match.md).
    pub fn take_refused_host_events(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.host_events_refused)
    }

    /// Notes a host event whose action was rejected (at most 10,000
    /// waiting to be taken).
    pub(crate) fn note_refused_host_event(&mut self, kind: &str, seat: Option<&str>) {
        if self.host_events_refused.len() < 10_000 {
            self.host_events_refused
                .push((kind.to_owned(), seat.unwrap_or("-").to_owned()));
        }
    }

    /// Notes a safe default the room plays for `seat` (at most 10,000
    /// waiting to be taken).
    pub(crate) fn note_safe_default(&mut self, seat: &str) {
        if self.safe_defaults.len() < 10_000 {
            self.safe_defaults.push(seat.to_owned());
        }
    }

    /// A notice that is a match function's fault.
    pub(crate) fn fault(&mut self, line: &str) {
        if self.faults.len() < 10_000 {
            self.faults.push(line.to_owned());
        }
        self.notice(line);
    }

    pub(crate) fn notice(&mut self, line: &str) {
        match &mut self.notice_hook {
            Some(hook) => hook(line),
            None if self.notices.len() < 10_000 => self.notices.push(line.to_owned()),
            None => {}
        }
    }

    /// The script runtime, if the game has scripts.
    pub fn scripts(&self) -> Option<&LuaHost> {
        self.scripts.as_deref()
    }

    /// The stop switch of the room's scripts (`LuaHost::interrupt`): set
    /// from another thread, the running call ends within a thousand
    /// instructions as if its budget were spent, and every later call
    /// fails at once until it is cleared. `None` for a room without
    /// scripts (nothing in it can stall).
    pub fn interrupt(&self) -> Option<std::sync::Arc<std::sync::atomic::AtomicBool>> {
        self.scripts.as_ref().map(|h| h.interrupt())
    }

    /// Whether the room's scripts were told to stop ([`Room::interrupt`]).
    pub fn interrupted(&self) -> bool {
        self.scripts
            .as_ref()
            .is_some_and(|h| h.interrupt().load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Holds the room to a byte budget (docs/lua-api.md, The byte budget).
    pub fn set_bytes_max(&mut self, bytes_max: u64) {
        self.kernel.set_bytes_max(bytes_max);
    }

    /// The kernel (state, hash).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    pub(crate) fn kernel_mut(&mut self) -> &mut Kernel {
        &mut self.kernel
    }

    /// What `viewer` sees of the room now (docs/observations.md): the
    /// kernel's projection of the state and, for a seat or a spectator,
    /// the game's own `view` from Lua `observe(seat)` / `public_view()`
    /// (null when the game defines none — or when it fails: the failure
    /// goes out as a notice, for the designer, never to the viewer), with
    /// every entity id in its strings as the viewer sees the entity.
    pub fn observe(&mut self, viewer: &Viewer) -> digipology_kernel::Value {
        let state = self.kernel.state();
        let mut doc = state.project(viewer);
        let seat = match viewer {
            Viewer::Referee => return doc,
            Viewer::Spectator => None,
            Viewer::Seat(s) => Some(&**s),
        };
        let view = match self.scripts.as_mut().and_then(|h| h.view(state, seat)) {
            None => digipology_kernel::Value::Null,
            Some(Ok(mut v)) => {
                state.scrub_value(&mut v, viewer);
                v
            }
            Some(Err(f)) => {
                let line = format!(
                    "{} failed ({}), the view is null: {}",
                    f.function,
                    f.kind.as_str(),
                    f.message
                );
                self.fault(&line);
                digipology_kernel::Value::Null
            }
        };
        if let digipology_kernel::Value::Object(m) = &mut doc {
            m.insert("view".into(), view);
        }
        doc
    }

    /// Keeps every event from now on, for [`Room::take_events`] (tests
    /// that judge them as each viewer sees them).
    pub fn keep_events(&mut self) {
        self.kept_events.get_or_insert_with(Vec::new);
        self.kept_kinds = None;
    }

    /// Keeps only the events `wanted` picks from now on (a tally that
    /// reads a few kinds: the rest are neither copied nor judged).
    pub fn keep_events_of(&mut self, wanted: fn(&digipology_kernel::EventKind) -> bool) {
        self.kept_events.get_or_insert_with(Vec::new);
        self.kept_kinds = Some(wanted);
    }

    /// The events kept since the last call (none unless
    /// [`Room::keep_events`] was called).
    pub fn take_events(&mut self) -> Vec<digipology_kernel::Event> {
        self.kept_events
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The events kept since the last [`Room::take_events`], left in
    /// place.
    pub fn peek_events(&self) -> &[digipology_kernel::Event] {
        self.kept_events.as_deref().unwrap_or_default()
    }

    /// Writes an outcome's events, then keeps it in the history and the
    /// record when those are on (`given` is `None` only when both are off).
    pub(crate) fn finish(
        &mut self,
        out: Outcome,
        given: Option<Given<'_>>,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        for line in self.take_log() {
            self.notice(&line);
        }
        self.processed += 1;
        if !out.accepted() {
            self.rejected += 1;
        }
        let mut lines = Vec::new();
        let mut buf = std::mem::take(&mut self.line_buf);
        let referee = self.view == Viewer::Referee;
        for e in &out.events {
            if !self.event_lines && self.history.is_none() {
                // Nobody reads the lines: only the timers are followed.
                self.track_timer(&e.kind);
                continue;
            }
            buf.clear();
            e.write_json_line(&mut buf);
            if self.history.is_some() {
                lines.push(buf.clone());
            }
            self.track_timer(&e.kind);
            if !referee {
                buf.clear();
                if !self.kernel.state().write_event_for(e, &self.view, &mut buf) {
                    continue;
                }
            }
            buf.push('\n');
            events.write_all(buf.as_bytes())?;
        }
        self.line_buf = buf;
        if let Some(kept) = &mut self.kept_events {
            // Judged later, after other actions: fixed to this one now.
            let state = self.kernel.state();
            let wanted = self.kept_kinds;
            kept.extend(
                out.events
                    .iter()
                    .filter(|e| wanted.is_none_or(|w| w(&e.kind)))
                    .cloned()
                    .map(|mut e| {
                        state.pin_sight(&mut e);
                        e
                    }),
            );
        }
        if let (Some(given), Some(h)) = (given, &mut self.history) {
            h.push(Step {
                input: input_of(given),
                hash: self.kernel.state_hash(),
                events: lines,
                changed: record::changes(&self.kernel),
            });
        }
        if let (Some(given), Some(rec)) = (given, &mut self.record) {
            let mut line = std::mem::take(&mut self.record_buf);
            line.clear();
            record::write_line(&mut line, out.seq, given, self.origin, &self.kernel);
            let written = rec.write_all(line.as_bytes()).map_err(record::failed);
            self.record_buf = line;
            written?;
        }
        if let Some((viewer, mut out)) = self.observations.take() {
            let doc = self.observation(&viewer);
            let written = out
                .write_all(doc.to_string().as_bytes())
                .and_then(|()| out.write_all(b"\n"));
            self.observations = Some((viewer, out));
            written?;
        }
        // Every action's events (and record line) leave the process before
        // the next action runs — or, reading a stream, before the room
        // waits for input: whatever happens to the process later, nothing
        // already produced is lost.
        if self.flush_each {
            self.flush_outputs(events)?;
        }
        Ok(())
    }

    /// Flushes the events and the record.
    fn flush_outputs(&mut self, events: &mut dyn Write) -> std::io::Result<()> {
        events.flush()?;
        self.flush_record()
    }

    fn track_timer(&mut self, kind: &EventKind) {
        match kind {
            EventKind::TimerRegistered {
                timer_id, delay, ..
            } => {
                // A timer's delay is a validated non-negative number;
                // capped at 9e15 ms, its ceiling is an integral double that
                // fits an i64 exactly.
                #[allow(clippy::cast_possible_truncation)]
                let wait = delay.ceil().min(9.0e15) as i64;
                let due = self.clock.saturating_add(wait);
                self.due_of.insert(timer_id.to_string(), due);
                self.due.insert((due, timer_id.to_string()));
            }
            EventKind::TimerFired { timer_id, .. } | EventKind::TimerCanceled { timer_id } => {
                if let Some(due) = self.due_of.remove(&**timer_id) {
                    self.due.remove(&(due, timer_id.to_string()));
                }
            }
            _ => {}
        }
    }

    /// Processes one action given as JSON: advances the clock to its `at`
    /// (firing timers due before it), stamps it with the clock when it has
    /// no `at`, and runs it.
    ///
    /// # Errors
    /// Writing events or the record failed.
    pub fn submit_json(
        &mut self,
        mut action: Value,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.stamp(&mut action, events)?;
        if self.matchup.is_some() {
            return self.submit_match_json(action, events);
        }
        let (kernel, host) = self.parts();
        let out = kernel.process_json(&action, host);
        self.finish(out, Some(Given::Json(&action)), events)
    }

    /// Processes one action given as JSON, like [`Room::submit_json`],
    /// and says which sequence the action itself took: timers and match
    /// expiries due before its `at` go first, under their own sequences
    /// (a server answers a client with the sequence of its action).
    ///
    /// # Errors
    /// Writing events or the record failed.
    pub fn submit_json_seq(
        &mut self,
        mut action: Value,
        events: &mut dyn Write,
    ) -> std::io::Result<u64> {
        self.stamp(&mut action, events)?;
        let seq = self.kernel.state().sequence;
        self.submit_json(action, events)?;
        Ok(seq)
    }

    /// Brings the room clock to an action's `at` (firing what is due before
    /// it), or stamps the action with the clock when it has none (an `at`
    /// that is not an integer stays, for the kernel to refuse).
    fn stamp(&mut self, action: &mut Value, events: &mut dyn Write) -> std::io::Result<()> {
        if self.reach(action.get("at").and_then(Value::as_i64), events)? {
            if let Some(obj) = action.as_object_mut() {
                if !obj.contains_key("at") {
                    obj.insert("at".into(), json!(self.clock));
                }
            }
        }
        Ok(())
    }

    /// When the room next has something to do on its own: the earliest
    /// pending timer or match expiry (room clock ms); `None` when nothing
    /// is pending or the match has ended. A host running the room in real
    /// time calls [`Room::fire_due`] then.
    pub fn next_due(&self) -> Option<i64> {
        if self.is_over() {
            return None;
        }
        let timer = self.due.first().map(|(at, _)| *at);
        let expiry = self
            .matchup
            .as_ref()
            .and_then(|m| m.next_expiry())
            .map(|e| e.at);
        match (timer, expiry) {
            (Some(t), Some(e)) => Some(t.min(e)),
            (t, e) => t.or(e),
        }
    }

    /// Brings the room clock to an action's `at` (a later one fires the
    /// timers due before it first). Whether the action has no `at` and
    /// takes the clock's.
    pub(crate) fn reach(
        &mut self,
        at: Option<i64>,
        events: &mut dyn Write,
    ) -> std::io::Result<bool> {
        let Some(at) = at else {
            return Ok(true);
        };
        if at > self.clock {
            if self.autofire {
                self.fire_due(Some(at), events)?;
            }
            self.clock = at;
        }
        Ok(false)
    }

    /// [`Room::submit_json`] for an action already read: the room clock
    /// first (its `at`, or the clock stamped on it), then the kernel.
    fn submit_action(&mut self, mut action: Action, events: &mut dyn Write) -> std::io::Result<()> {
        if self.reach(action.at, events)? {
            action.at = Some(self.clock);
        }
        if self.matchup.is_some() {
            return self.submit_match(action, None, events);
        }
        let (kernel, host) = self.parts();
        let out = kernel.process(&action, host);
        self.finish(out, Some(Given::Typed(&action)), events)
    }

    /// Advances the clock by `ms`, firing every timer due up to the new
    /// time (scenario steps).
    ///
    /// # Errors
    /// Writing events or the record failed.
    pub fn advance(&mut self, ms: i64, events: &mut dyn Write) -> std::io::Result<()> {
        let target = self.clock.saturating_add(ms);
        self.fire_due(Some(target.saturating_add(1)), events)?;
        self.clock = target;
        Ok(())
    }

    /// Fires, in due-time then id order, every timer due before `before`
    /// (every pending timer when `None`) — at most `fires_max` of them in
    /// one go: a timer that re-arms itself cannot make one far `at` (or
    /// the end of the input) run without end. What is left stays pending
    /// and fires at the next catch-up.
    ///
    /// # Errors
    /// Writing events or the record failed.
    pub fn fire_due(&mut self, before: Option<i64>, events: &mut dyn Write) -> std::io::Result<()> {
        let mut fired = 0u64;
        loop {
            // A match that has ended fires nothing more.
            if self.matchup.as_ref().is_some_and(|m| m.is_over()) {
                break;
            }
            let timer = self.due.first().cloned();
            let expiry = self.matchup.as_ref().and_then(|m| m.next_expiry());
            // At the same time, the match's clocks come before the game's
            // timers (docs/match.md, Time).
            let take_expiry = match (&timer, &expiry) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some((due, _)), Some(e)) => e.at <= *due,
            };
            let due = match (take_expiry, &timer, &expiry) {
                (true, _, Some(e)) => e.at,
                (false, Some((due, _)), _) => *due,
                _ => break,
            };
            if before.is_some_and(|b| due >= b) {
                break;
            }
            if fired >= self.fires_max {
                let expiry = if self
                    .matchup
                    .as_ref()
                    .and_then(|m| m.next_expiry())
                    .is_some()
                {
                    " and the match's next expiry"
                } else {
                    ""
                };
                let line = format!(
                    "digipology: stopped after {fired} timer fires and expiries {} ({} timers{expiry} still pending)",
                    if before.is_none() {
                        "at the end of the input"
                    } else {
                        "in one catch-up, before the next action"
                    },
                    self.due.len()
                );
                self.notice(&line);
                break;
            }
            fired += 1;
            self.clock = self.clock.max(due);
            if let (true, Some(e)) = (take_expiry, expiry) {
                self.fire_expiry(e, events)?;
                continue;
            }
            let Some((due, id)) = timer else { break };
            self.due.remove(&(due, id.clone()));
            self.due_of.remove(&id);
            let action = json!({"type": "system.timer_fire", "source": {"kind": "system"},
                                "payload": {"timerId": id}, "at": due});
            self.submit_json(action, events)?;
        }
        Ok(())
    }

    /// Processes one raw input line (bytes, maybe not UTF-8).
    ///
    /// # Errors
    /// Writing events failed.
    pub fn submit_line(&mut self, line: &Line, events: &mut dyn Write) -> std::io::Result<()> {
        let text = match line {
            Line::TooLong(len) => Err(format!(
                "line of {len} bytes exceeds the {LINE_BYTES_MAX}-byte limit"
            )),
            Line::Bytes(bytes) => {
                std::str::from_utf8(bytes).map_err(|e| format!("line is not UTF-8: {e}"))
            }
        };
        // The fast way in: a well-formed action read straight into its
        // typed envelope (a history keeps JSON, so it takes the other way).
        if let Ok(t) = text {
            if self.history.is_none() {
                if let Some(action) = Action::from_json_str(t) {
                    return self.submit_action(action, events);
                }
            }
        }
        let (value, raw) = match text {
            Ok(t) => (
                serde_json::from_str::<Value>(t).map_err(|e| format!("not valid JSON: {e}")),
                t.to_owned(),
            ),
            Err(m) => (Err(m), String::new()),
        };
        match value {
            Ok(v) => self.submit_json(v, events),
            Err(message) => {
                let rejection = if self.is_over() {
                    crate::matches::over()
                } else {
                    Rejection::new(RejectCode::MalformedAction, message)
                };
                let out = self.kernel.reject_input(None, None, rejection);
                let raw = if raw.len() > 4096 { "" } else { raw.as_str() };
                self.finish(out, Some(Given::Raw(raw)), events)
            }
        }
    }

    /// `system.game_start` with the manifest's settings.
    ///
    /// # Errors
    /// Writing events failed.
    pub fn start(&mut self, events: &mut dyn Write) -> std::io::Result<()> {
        self.start_overriding(&serde_json::Map::new(), events)
    }

    /// `system.game_start` with the manifest's settings, then a match's
    /// rules (docs/match.md), then `over` (a scenario's own settings), each
    /// overriding the one before.
    ///
    /// # Errors
    /// Writing events failed.
    pub fn start_overriding(
        &mut self,
        over: &serde_json::Map<String, Value>,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        let rules = self
            .matchup
            .as_ref()
            .map(|m| m.config.rules.clone())
            .unwrap_or_default();
        if rules.is_empty() && over.is_empty() {
            return self.submit_json(system("system.game_start", json!({})), events);
        }
        let mut settings: serde_json::Map<String, Value> = self
            .kernel
            .state()
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), v.to_json()))
            .collect();
        settings.extend(rules);
        settings.extend(over.clone());
        self.start_with(Value::Object(settings), events)
    }

    /// `system.game_start` with these settings instead of the manifest's.
    ///
    /// # Errors
    /// Writing events failed.
    pub fn start_with(&mut self, settings: Value, events: &mut dyn Write) -> std::io::Result<()> {
        self.submit_json(
            system("system.game_start", json!({ "settings": settings })),
            events,
        )
    }

    /// Joins each player and seats them in seat order (extra players stay
    /// unseated).
    ///
    /// # Errors
    /// Writing events failed.
    pub fn seat_players(
        &mut self,
        players: &[String],
        seats: &[String],
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        for (i, p) in players.iter().enumerate() {
            self.submit_json(
                system("system.player_joined", json!({ "playerId": p })),
                events,
            )?;
            if let Some(seat) = seats.get(i) {
                let payload = json!({ "playerId": p, "seatId": seat });
                self.submit_json(system("system.seat_assign", payload), events)?;
            }
        }
        Ok(())
    }

    /// Processes every line of `input`; blank lines are skipped.
    /// `before_first` runs once before the first action — or right after
    /// it when the first action is itself `system.game_start` (it is then
    /// told so, and the host does not inject one).
    ///
    /// # Errors
    /// Reading input or writing events failed.
    pub fn run_lines(
        &mut self,
        input: impl BufRead,
        mut before_first: impl FnMut(&mut Room, bool, &mut dyn Write) -> std::io::Result<()>,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        // Events are flushed whenever the input read so far is used up —
        // before the room could wait for more — rather than after every
        // action: one write per batch of lines a reader delivers, and a
        // room fed one line at a time still answers each at once.
        let mut lines = Lines::new(
            std::io::BufReader::with_capacity(INPUT_BUFFER_BYTES, input),
            LINE_BYTES_MAX,
        );
        self.flush_each = false;
        let result = self.run_lines_batched(&mut lines, &mut before_first, events);
        self.flush_each = true;
        result?;
        self.flush_outputs(events)
    }

    fn run_lines_batched<R: BufRead>(
        &mut self,
        lines: &mut Lines<std::io::BufReader<R>>,
        before_first: &mut impl FnMut(&mut Room, bool, &mut dyn Write) -> std::io::Result<()>,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        let mut first = true;
        while let Some(line) = lines.next_line()? {
            self.run_line(line, &mut first, lines, before_first, events)?;
            // A match with a result reads no more input (docs/match.md).
            if self.is_over() {
                break;
            }
            // No complete line is ready: the next read may wait for the
            // input, so everything so far leaves now.
            if !lines.line_ready() {
                self.flush_outputs(events)?;
            }
        }
        if first {
            before_first(self, false, events)?;
        }
        Ok(())
    }

    fn run_line<R: BufRead>(
        &mut self,
        line: Line,
        first: &mut bool,
        lines: &mut Lines<std::io::BufReader<R>>,
        before_first: &mut impl FnMut(&mut Room, bool, &mut dyn Write) -> std::io::Result<()>,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        if let Line::Bytes(b) = &line {
            if b.iter().all(u8::is_ascii_whitespace) {
                return Ok(());
            }
        }
        if *first {
            *first = false;
            // A file that starts the game itself starts it before the
            // host seats anyone (game_start must be sequence 0).
            if starts_game(&line) {
                self.submit_line(&line, events)?;
                return before_first(self, true, events);
            }
            before_first(self, false, events)?;
        }
        self.submit_line(&line, events)?;
        lines.recycle(line);
        Ok(())
    }

    /// Flushes the record, if any.
    ///
    /// # Errors
    /// Writing failed.
    pub fn flush_record(&mut self) -> std::io::Result<()> {
        match &mut self.record {
            Some(r) => r.flush().map_err(record::failed),
            None => Ok(()),
        }
    }
}

/// An input as a history keeps it.
fn input_of(given: Given<'_>) -> Input {
    match given {
        Given::Typed(action) => {
            let mut text = String::new();
            action.write_json(&mut text);
            Input::Action(serde_json::from_str(&text).unwrap_or(Value::Null))
        }
        Given::Json(v) => Input::Action(v.clone()),
        Given::Raw(r) => Input::Raw(r.to_owned()),
    }
}

pub(crate) fn system(action_type: &str, payload: Value) -> Value {
    json!({"type": action_type, "source": {"kind": "system"}, "payload": payload})
}

fn starts_game(line: &Line) -> bool {
    let Line::Bytes(b) = line else { return false };
    serde_json::from_slice::<Value>(b)
        .ok()
        .and_then(|v| {
            v.get("type")
                .and_then(|t| t.as_str())
                .map(|t| t == "system.game_start")
        })
        .unwrap_or(false)
}
