//! One room as a task (docs/server.md): it owns the [`Room`], takes
//! commands from its channel in arrival order, runs its timers and match
//! expiries on the server's clock, writes every input to the room log and
//! answers or publishes only once the log says it is durable.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::rc::Rc;
use std::sync::Arc;

use digipology_kernel::rng::{splitmix64, splitmix_order};
use digipology_kernel::{EventKind, RejectCode, Viewer};
use digipology_room::matches::Participation;
use digipology_room::Room;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::feed::{Feed, Tick, SPECTATOR};
use crate::store::{Ack, Entry};

/// What a room task is asked to do.
pub enum Cmd {
    /// A seat's action attempt.
    Submit {
        /// The seat (from its token).
        seat: String,
        /// The client's id for the attempt.
        client_id: String,
        /// `{type, payload}` as the client sent it.
        action: Value,
        /// Where the answer goes.
        reply: oneshot::Sender<Answer>,
    },
    /// An observation for a seat or the spectators.
    Observe {
        /// Whose.
        viewer: Viewer,
        /// Where it goes.
        reply: oneshot::Sender<Value>,
    },
    /// A seat's event stream opened.
    StreamOpened(String),
    /// A seat's event stream closed.
    StreamClosed(String),
    /// The game's files changed (`serve --watch`): run this game from now
    /// on, keeping the table.
    Reload(Arc<crate::hub::Game>),
    /// The server stops (docs/server.md, Stopping): everything the room
    /// did is durable (each input is, before the next command is taken);
    /// it takes no more commands and its task ends. Answered as it ends.
    Stop(oneshot::Sender<()>),
}

/// The answer to an attempt.
#[derive(Clone, Debug)]
pub enum Answer {
    /// Processed (accepted or rejected by the game): the JSON body.
    Done(String),
    /// The id was used before for another action.
    Reused,
    /// The room cannot take it (stopped, full): code and message.
    Unavailable(&'static str, String),
}

/// A seat as the room knows it.
#[derive(Clone, Debug)]
pub struct SeatInfo {
    /// The seat's player.
    pub player_id: String,
    /// A built-in bot plays it.
    pub bot: bool,
}

/// How a room task begins.
pub enum Begin {
    /// A new match: start the game and seat these players: (seat, player
    /// id, name) in the game's seat order.
    New(Vec<(String, String, Option<String>)>),
    /// A match the log holds: replay its lines, verifying each state hash,
    /// and take back the answers it gave.
    Recover(Vec<String>, Vec<Ack>),
}

/// What a room task starts from (all of it can cross threads: the room
/// itself is built on the thread that runs it).
pub struct Spec {
    /// The match.
    pub match_id: String,
    /// Its game.
    pub game: Arc<crate::hub::Game>,
    /// The record header it runs under: seed, match config.
    pub header: Value,
    /// Seats in the game's order.
    pub seats: BTreeMap<String, SeatInfo>,
    /// New or recovered.
    pub begin: Begin,
    /// A designer's match: its script errors and rejections reach its
    /// viewers in full (docs/table.md).
    pub designer: bool,
}

/// Why a room task stops what it was doing.
pub enum Halt {
    /// Something it cannot go on from (its log failed): the room stops.
    Fatal(String),
    /// The game stalled: an input ran past the operator's allowance and
    /// the watchdog stopped it (docs/server.md, A game that stalls).
    Stalled,
}

impl From<String> for Halt {
    fn from(e: String) -> Halt {
        Halt::Fatal(e)
    }
}

/// A step of a room task.
type Step<T> = Result<T, Halt>;

/// A record sink the room writes into and the task drains.
pub struct Shared(pub Rc<RefCell<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Live {
    id: String,
    /// The game it runs (replaced by a reload).
    game: Arc<crate::hub::Game>,
    /// The record header it runs under.
    header: Value,
    /// A designer's match (see [`Spec::designer`]).
    designer: bool,
    room: Room,
    record: Rc<RefCell<Vec<u8>>>,
    hub: Arc<crate::hub::Hub>,
    feed: Arc<Feed>,
    next_line: u64,
    seats: BTreeMap<String, SeatInfo>,
    /// Whose events are published: each seat, then the spectators.
    viewers: Vec<(String, Viewer)>,
    acks: HashMap<(String, String), (String, String)>,
    /// The room clock at `started`.
    clock_base: i64,
    started: Instant,
    streams: HashMap<String, usize>,
    grace: BTreeMap<String, Instant>,
    finished: bool,
    /// When the room last got a command.
    idle_since: Instant,
    /// When the match last logged an input (or the room started).
    last_input: Instant,
    /// Its abandonment was refused (the game's handler failed): not tried
    /// again.
    abandon_refused: bool,
    /// The game stalled this room: its scripts stay stopped (every call
    /// into them fails at once) for as long as the room is loaded.
    disabled: bool,
}

/// Runs a room until its channel closes or its log fails.
pub async fn run(
    spec: Spec,
    hub: Arc<crate::hub::Hub>,
    feed: Arc<Feed>,
    mut rx: mpsc::Receiver<Cmd>,
) {
    let id = spec.match_id.clone();
    let mut live = match Live::build(spec, hub.clone(), feed.clone()).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(room = %id, "room not started: {e}");
            hub.stopped(&id);
            feed.stop();
            return;
        }
    };
    let first = live.bots().await;
    if let Err(e) = live.settle(first).await {
        tracing::error!(room = %live.id, "room stopped: {e}");
        live.hub.stopped(&live.id);
        live.feed.stop();
        return;
    }
    loop {
        let wake = live.next_wake();
        let cmd = tokio::select! {
            c = rx.recv() => match c { Some(c) => Some(c), None => break },
            () = sleep_until(wake) => None,
        };
        // A finished room nobody asked anything for a while lets its
        // memory go; the hub loads it again from the log when asked.
        if cmd.is_none()
            && live.finished
            && wake.is_some_and(|w| w <= Instant::now())
            && live.idle_since.elapsed() >= FINISHED_IDLE
        {
            // Take no more commands, but answer those already queued.
            rx.close();
            while let Some(c) = rx.recv().await {
                let done = live.handle(c).await;
                if live.settle(done).await.is_err() {
                    break;
                }
            }
            break;
        }
        if let Some(Cmd::Stop(done)) = cmd {
            // Whatever is queued behind it is left unanswered: its
            // sender hears the room stopped, and retries after the start.
            rx.close();
            let _ = done.send(());
            break;
        }
        if cmd.is_some() {
            live.idle_since = Instant::now();
        }
        let result = match cmd {
            Some(c) => live.handle(c).await,
            None => live.wake().await,
        };
        if let Err(e) = live.settle(result).await {
            tracing::error!(room = %live.id, "room stopped: {e}");
            live.hub.stopped(&live.id);
            live.feed.stop();
            break;
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// A seat's attempt as the room processes it: the server's source and
/// clock, the client's type and payload.
fn player_action(player: &str, action: &Value, at: i64) -> Value {
    json!({"type": action.get("type").cloned().unwrap_or(Value::Null),
           "source": {"kind": "player", "playerId": player},
           "payload": action.get("payload").cloned().unwrap_or_else(|| json!({})),
           "at": at})
}

/// A digest of an action, to tell a retry from a reused id.
pub fn action_digest(action: &Value) -> String {
    blake3::hash(action.to_string().as_bytes()).to_hex()[..32].to_owned()
}

/// Why a match's log did not replay.
pub enum Unreplayed {
    /// Line `n` could not be processed.
    Line(usize, String),
    /// Line `n` (sequence `seq`) did not reach the state hash it holds.
    Hash {
        line: usize,
        seq: u64,
        got: String,
        said: String,
    },
    /// Line `n` ran longer than the server's allowance and the watchdog
    /// stopped it (docs/server.md, A game that stalls).
    Stalled(usize),
}

impl std::fmt::Display for Unreplayed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreplayed::Line(n, e) => write!(f, "log line {n}: {e}"),
            Unreplayed::Hash {
                line,
                seq,
                got,
                said,
            } => write!(
                f,
                "log line {line} (sequence {seq}): the state hash is {got}, the log says {said}"
            ),
            Unreplayed::Stalled(n) => write!(
                f,
                "log line {n}: the game stalled replaying it (it ran longer than the server's allowance)"
            ),
        }
    }
}

/// Replays a match's log lines into `room` (its own timers held back: the
/// log holds every fire), each line's state hash checked when `verify`;
/// `each` sees the room after each line, with that line's sequence. What
/// recovery, a `--watch` rebuild and a replay frame share.
///
/// # Errors
/// The first line that does not replay, or (verifying) whose hash differs.
pub fn replay_log(
    room: &mut Room,
    lines: &[String],
    verify: bool,
    mut each: impl FnMut(&mut Room, u64),
) -> Result<(), Unreplayed> {
    room.autofire = false;
    // On a room thread, each line has the allowance an input has — never
    // the whole log one allowance (a long match would never come back).
    let slot = crate::hub::room_slot();
    let switch = room.interrupt();
    for (n, line) in lines.iter().enumerate() {
        let busy = match (&slot, &switch) {
            (Some(slot), Some(switch)) => Some(slot.enter(switch.clone())),
            _ => None,
        };
        let replayed = room.replay_line(line, &mut std::io::sink());
        drop(busy);
        if room.interrupted() {
            return Err(Unreplayed::Stalled(n));
        }
        let said = replayed.map_err(|e| Unreplayed::Line(n, e.to_string()))?;
        if verify {
            let got = room.kernel().state_hash();
            if got != said.hash {
                return Err(Unreplayed::Hash {
                    line: n,
                    seq: said.seq,
                    got,
                    said: said.hash,
                });
            }
        }
        each(room, said.seq);
    }
    room.autofire = true;
    Ok(())
}

fn system(ty: &str, payload: Value) -> Value {
    json!({"type": ty, "source": {"kind": "system"}, "payload": payload})
}

impl Live {
    /// Builds the room on this thread, then starts it (a new match) or
    /// replays its log (a recovered one), then lets the bots move.
    async fn build(spec: Spec, hub: Arc<crate::hub::Hub>, feed: Arc<Feed>) -> Result<Live, String> {
        let record = Rc::new(RefCell::new(Vec::new()));
        let room = crate::hub::build(&spec.game, &spec.header, Shared(record.clone()))?;
        // The record header went to the match's row already.
        record.borrow_mut().clear();
        let mut viewers: Vec<(String, Viewer)> = spec
            .seats
            .keys()
            .map(|s| (s.clone(), Viewer::Seat(s.as_str().into())))
            .collect();
        viewers.push((SPECTATOR.to_owned(), Viewer::Spectator));
        let mut live = Live {
            id: spec.match_id,
            game: spec.game,
            header: spec.header,
            designer: spec.designer,
            room,
            record,
            hub,
            feed,
            next_line: 0,
            seats: spec.seats,
            viewers,
            acks: HashMap::new(),
            clock_base: 0,
            started: Instant::now(),
            streams: HashMap::new(),
            grace: BTreeMap::new(),
            finished: false,
            idle_since: Instant::now(),
            last_input: Instant::now(),
            abandon_refused: false,
            disabled: false,
        };
        live.room.keep_events();
        let begun = match spec.begin {
            Begin::New(players) => live.start(players).await,
            Begin::Recover(lines, acks) => live.recover(&lines, acks),
        };
        match begun {
            Ok(()) => Ok(live),
            Err(Halt::Fatal(e)) => Err(e),
            Err(Halt::Stalled) => {
                Err("the game stalled while the room began (an input ran longer than the server's allowance)".into())
            }
        }
    }

    /// Runs `f` on the room, this room thread marked busy with it for the
    /// watchdog (docs/server.md, A game that stalls): `Stalled` when the
    /// watchdog stopped the game meanwhile.
    fn on_room<R>(&mut self, f: impl FnOnce(&mut Room) -> R) -> Step<R> {
        let slot = crate::hub::room_slot();
        let out = match (slot, self.room.interrupt()) {
            (Some(slot), Some(switch)) if !self.disabled => {
                let _busy = slot.enter(switch);
                f(&mut self.room)
            }
            _ => f(&mut self.room),
        };
        if !self.disabled && self.room.interrupted() {
            return Err(Halt::Stalled);
        }
        Ok(out)
    }

    /// What a step's outcome leaves to do: nothing, or — the game
    /// stalled — the stall handled ([`Live::stalled`]).
    ///
    /// # Errors
    /// The room cannot go on.
    async fn settle(&mut self, outcome: Step<()>) -> Result<(), String> {
        match outcome {
            Ok(()) => Ok(()),
            Err(Halt::Fatal(e)) => Err(e),
            Err(Halt::Stalled) => self.stalled().await,
        }
    }

    /// The game stalled: an input ran past the operator's allowance
    /// (`--room-stall-ms`) and the watchdog stopped it. What the input
    /// began is undone — the room is built again from its log, which never
    /// held it — and the match ends with a logged `match.halt`, which runs
    /// no script: recovery replays the halt, never the input. The game's
    /// scripts stay stopped in this room from then on. Every other room
    /// of the server went on meanwhile (the watchdog stopped this one
    /// within a thousand instructions of the allowance).
    async fn stalled(&mut self) -> Result<(), String> {
        let ms = self.hub.options.room_stall_ms;
        tracing::warn!(room = %self.id, "the game stalled: an input ran longer than {ms} ms; its match is aborted");
        if !self.finished {
            self.rebuild()?;
            let reason = format!(
                "aborted: the game stalled (an input ran longer than the server allows, {ms} ms)"
            );
            let mut a = system("match.halt", json!({ "reason": reason }));
            a["at"] = json!(self.room.clock());
            // Nothing fires before it: what was due waits for nothing now.
            self.room.autofire = false;
            let done = self.room.submit_json(a, &mut std::io::sink());
            self.room.autofire = true;
            done.map_err(|e| e.to_string())?;
            self.commit(None).await?;
        }
        self.disable();
        self.feed.notice(
            json!({"ok": false, "message": "the game stalled: the server stopped it and aborted the match"})
                .to_string(),
        );
        Ok(())
    }

    /// Stops the game's scripts in this room for good (every call into
    /// them fails at once).
    fn disable(&mut self) {
        if let Some(switch) = self.room.interrupt() {
            switch.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.disabled = true;
    }

    /// The lines the log holds for this match.
    fn logged_lines(&self) -> Result<Vec<String>, String> {
        Ok(self
            .hub
            .log
            .histories(std::slice::from_ref(&self.id))?
            .remove(&self.id)
            .unwrap_or_default()
            .lines)
    }

    /// The room as its log leaves it: built again and the log replayed
    /// (hashes checked), what was not logged — the input that stalled, and
    /// anything after the last commit — gone.
    fn rebuild(&mut self) -> Result<(), String> {
        let lines = self.logged_lines()?;
        let mut room = crate::hub::build(&self.game, &self.header, Shared(self.record.clone()))?;
        room.keep_events();
        replay_log(&mut room, &lines, true, |_, _| {}).map_err(|e| e.to_string())?;
        // Those events were published when they happened; what the stalled
        // input made was never published.
        room.take_events();
        self.record.borrow_mut().clear();
        self.room = room;
        Ok(())
    }

    async fn start(&mut self, players: Vec<(String, String, Option<String>)>) -> Step<()> {
        let io = |e: std::io::Error| e.to_string();
        self.on_room(|r| r.start(&mut std::io::sink()))?
            .map_err(io)?;
        for (seat, player, name) in players {
            let mut payload = json!({ "playerId": player });
            if let Some(n) = name {
                payload["name"] = json!(n);
            }
            self.on_room(|r| {
                r.submit_json(
                    system("system.player_joined", payload),
                    &mut std::io::sink(),
                )
            })?
            .map_err(io)?;
            let assign = json!({"playerId": player, "seatId": seat});
            self.on_room(|r| {
                r.submit_json(system("system.seat_assign", assign), &mut std::io::sink())
            })?
            .map_err(io)?;
        }
        Ok(self.commit(None).await?)
    }

    /// Replays the log: every line's input again, its state hash checked
    /// against the log's, its events published as they were.
    fn recover(&mut self, lines: &[String], acks: Vec<Ack>) -> Step<()> {
        // Not the version it began with: the log did not hold that one (or
        // predates kept versions), so the files of now were used.
        let changed =
            self.header.get("version").and_then(Value::as_str) != Some(&*self.game.version);
        let hint = move |e: String| {
            if changed {
                format!("{e} (the log does not hold the game's files this match began with: it ran the files of now, which may have changed since)")
            } else {
                e
            }
        };
        // Each line is watched on its own (`replay_log`).
        replay_log(&mut self.room, lines, true, |_, _| {}).map_err(|e| match e {
            Unreplayed::Stalled(_) => Halt::Fatal(e.to_string()),
            e => Halt::Fatal(hint(e.to_string())),
        })?;
        self.record.borrow_mut().clear();
        self.next_line = u64::try_from(lines.len()).unwrap_or(u64::MAX);
        self.acks = acks
            .into_iter()
            .map(|a| ((a.seat, a.client_id), (a.action_digest, a.answer)))
            .collect();
        self.clock_base = self.room.clock();
        self.started = Instant::now();
        self.finished = self.room.is_over();
        let items = self.project();
        self.feed.publish(items, self.tick());
        Ok(())
    }

    /// The room clock now: the clock the room had when the task started,
    /// plus the time since (time the server was down does not count).
    fn now(&self) -> i64 {
        let since = i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        self.clock_base.saturating_add(since).max(self.room.clock())
    }

    fn instant_of(&self, at: i64) -> Instant {
        let ahead = u64::try_from(at.saturating_sub(self.now())).unwrap_or(0);
        Instant::now() + std::time::Duration::from_millis(ahead)
    }

    fn next_wake(&self) -> Option<Instant> {
        if self.finished {
            return Some(self.idle_since + FINISHED_IDLE);
        }
        if self.full() || self.disabled {
            // A stalled game's room waits for nothing: its timers would
            // only fail on the stopped scripts and log what a restart
            // could not replay (docs/server.md, A game that stalls).
            return None;
        }
        let due = self.room.next_due().map(|at| self.instant_of(at));
        let grace = self.grace.values().min().copied();
        [due, grace, self.abandon_at()].into_iter().flatten().min()
    }

    /// When the match is abandoned if nothing enters it before.
    fn abandon_at(&self) -> Option<Instant> {
        let after = self.hub.options.abandon_after_ms;
        // Only a match contract can abort (a game without one never ends),
        // and a match with a timer or clock pending is not abandoned: what
        // is due will end it or move it.
        let can = after > 0
            && !self.abandon_refused
            && self.room.match_layer().is_some()
            && self.room.next_due().is_none();
        can.then(|| self.last_input + std::time::Duration::from_millis(after))
    }

    /// Whether the match has logged its most inputs: nothing more enters
    /// it (no action, timer, expiry, bot move or disconnect).
    fn full(&self) -> bool {
        self.next_line >= self.hub.options.max_inputs_per_match
    }

    /// The match has its result: no more graces, and the lobby knows.
    fn mark_finished(&mut self) {
        self.finished = true;
        self.grace.clear();
        self.hub.finished(&self.id, self.public_result());
    }

    fn tick(&self) -> Tick {
        Tick {
            next: self.room.kernel().state().sequence,
            over: self.room.is_over(),
            stopped: false,
            reloads: self.feed.tick().reloads,
        }
    }

    async fn handle(&mut self, cmd: Cmd) -> Step<()> {
        match cmd {
            Cmd::Submit {
                seat,
                client_id,
                action,
                reply,
            } => {
                let answer = match self.submit(&seat, client_id, &action).await {
                    Ok(a) => a,
                    Err(Halt::Stalled) => {
                        let _ = reply.send(Answer::Unavailable(
                            "game_stalled",
                            "the game stalled on this action: the server stopped it, undid it and aborted the match".into(),
                        ));
                        return Err(Halt::Stalled);
                    }
                    Err(e) => return Err(e),
                };
                let _ = reply.send(answer);
                self.bots().await?;
            }
            Cmd::Observe { viewer, reply } => {
                let caught = self.catch_up().await;
                if let Err(Halt::Stalled) = caught {
                    // The observation after the stall: the match aborted.
                    self.stalled().await?;
                } else {
                    caught?;
                }
                let now = self.now();
                let seen = self.on_room(|r| r.observation_at(&viewer, now));
                match seen {
                    Ok(o) => {
                        let _ = reply.send(o);
                    }
                    Err(Halt::Stalled) => {
                        self.stalled().await?;
                        let _ = reply.send(self.room.observation_at(&viewer, now));
                    }
                    Err(e) => return Err(e),
                }
            }
            Cmd::StreamOpened(seat) => {
                *self.streams.entry(seat.clone()).or_default() += 1;
                self.grace.remove(&seat);
            }
            Cmd::Reload(game) => {
                let notice = match self.reload(game) {
                    Ok(what) => json!({"ok": true, "message": what}),
                    Err(Halt::Stalled) => return Err(Halt::Stalled),
                    Err(Halt::Fatal(e)) => json!({"ok": false, "message": format!(
                        "reload failed, the previous code keeps running: {e}"
                    )}),
                };
                self.feed.notice(notice.to_string());
                self.bots().await?;
            }
            // The run loop stops at it; one still queued behind a room
            // that is letting its memory go is answered as that room ends.
            Cmd::Stop(done) => {
                let _ = done.send(());
            }
            Cmd::StreamClosed(seat) => {
                let n = self.streams.entry(seat.clone()).or_default();
                *n = n.saturating_sub(1);
                if *n == 0 && !self.finished {
                    let grace = std::time::Duration::from_millis(self.hub.options.grace_ms);
                    let at = Instant::now() + grace;
                    self.grace.insert(seat, at);
                }
            }
        }
        Ok(())
    }

    /// Runs `game` from now on (`serve --watch`, as `digipology watch`
    /// does): new scripts take over the table as it is; a changed
    /// game.json rebuilds the table and replays the match's inputs on it.
    /// On any error the room keeps its code and table.
    fn reload(&mut self, game: Arc<crate::hub::Game>) -> Step<&'static str> {
        if self.disabled {
            return Err(Halt::Fatal(
                "the game stalled in this match: its scripts stay stopped".into(),
            ));
        }
        if game.package.json == self.game.package.json {
            let host = game
                .package
                .script_host_from(&game.sources, self.room.kernel().state(), (None, None))
                .map_err(|e| e.to_string())?;
            self.room.replace_scripts(host);
            self.game = game;
            return Ok("reloaded scripts");
        }
        let lines = self.logged_lines()?;
        let rebuilt = (|| {
            let mut room = crate::hub::build(&game, &self.header, Shared(self.record.clone()))?;
            room.keep_events();
            // Not verified: the new game may well reach other states.
            replay_log(&mut room, &lines, false, |_, _| {}).map_err(|e| {
                let (n, why) = match e {
                    Unreplayed::Line(n, why) => (n, why),
                    Unreplayed::Hash { line, .. } => (line, "its state differs".to_owned()),
                    Unreplayed::Stalled(n) => (
                        n,
                        "the game stalled replaying it (it ran longer than the server's allowance)"
                            .to_owned(),
                    ),
                };
                format!("the new game.json cannot replay this match (input {n}): {why}")
            })?;
            // Those events were published when they happened.
            room.take_events();
            Ok::<Room, String>(room)
        })();
        // What the rebuild wrote is not the match's record.
        self.record.borrow_mut().clear();
        self.room = rebuilt.map_err(Halt::Fatal)?;
        self.game = game;
        // The new rules may have ended the match on its own inputs.
        if self.room.is_over() && !self.finished {
            self.mark_finished();
            self.feed.publish(Vec::new(), self.tick());
        }
        Ok("game.json changed: restarted the table and replayed the match on it")
    }

    async fn submit(&mut self, seat: &str, client_id: String, action: &Value) -> Step<Answer> {
        let digest = action_digest(action);
        let key = (seat.to_owned(), client_id);
        if let Some((d, answer)) = self.acks.get(&key) {
            return Ok(if *d == digest {
                // A retry: answered from the cache, nothing processed or
                // logged (a bench counts these to prove it measures none).
                metrics::counter!("digipology_actions_replayed_total").increment(1);
                Answer::Done(answer.clone())
            } else {
                Answer::Reused
            });
        }
        if self.full() {
            return Ok(Answer::Unavailable(
                "match_full",
                format!(
                    "this match has logged its most inputs ({})",
                    self.hub.options.max_inputs_per_match
                ),
            ));
        }
        let Some(info) = self.seats.get(seat) else {
            return Ok(Answer::Unavailable(
                "no_seat",
                format!("no seat {seat:?} here"),
            ));
        };
        if self.disabled {
            return Ok(Answer::Unavailable(
                "game_stalled",
                "the game stalled in this match: the server stopped it and aborted the match"
                    .into(),
            ));
        }
        let a = player_action(&info.player_id, action, self.now());
        let seq = self
            .on_room(|r| r.submit_json_seq(a, &mut std::io::sink()))?
            .map_err(|e| e.to_string())?;
        let answer = self.verdict(seat, seq);
        let ack = Ack {
            seat: key.0.clone(),
            client_id: key.1.clone(),
            action_digest: digest.clone(),
            answer: answer.clone(),
        };
        self.commit(Some(ack)).await?;
        self.acks.insert(key, (digest, answer.clone()));
        Ok(Answer::Done(answer))
    }

    /// Whose sight an event is written with for `viewer`: in a designer's
    /// match a script error and a rejection are written whole (its maker
    /// knows its seed, so every shuffle, already; the designer needs the
    /// error's text, file and line), otherwise as `viewer` may see them.
    fn sight<'a>(&self, e: &digipology_kernel::Event, viewer: &'a Viewer) -> &'a Viewer {
        const REFEREE: &Viewer = &Viewer::Referee;
        let error = matches!(
            e.kind,
            EventKind::ScriptError { .. } | EventKind::ActionRejected { .. }
        );
        if self.designer && error {
            REFEREE
        } else {
            viewer
        }
    }

    /// The match's result as the lobby lists it to anyone: why it was
    /// aborted is the game's text, read as a spectator may.
    fn public_result(&self) -> Option<String> {
        self.room.match_result_for(&Viewer::Spectator)
    }

    /// The answer to the attempt that took sequence `seq`: accepted or
    /// rejected (its code and message as the seat sees them, a guard's
    /// reason up to [`REASON_MAX`] characters), with the events of that
    /// sequence the seat sees (a sensing call's answer among them).
    fn verdict(&self, seat: &str, seq: u64) -> String {
        let viewer = Viewer::Seat(seat.into());
        let state = self.room.kernel().state();
        let mut events = Vec::new();
        let mut rejected = None;
        let mut line = String::new();
        for e in self.room.peek_events().iter().filter(|e| e.seq == seq) {
            line.clear();
            if !state.write_event_for(e, self.sight(e, &viewer), &mut line) {
                continue;
            }
            let mut v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if let EventKind::ActionRejected { rejection, .. } = &e.kind {
                // A guard's reason is the game's word to the player who
                // tried: it goes to this seat (the attempt is its own),
                // and to no other viewer (docs/observations.md), naming
                // entities as the seat sees them — read before it is cut,
                // as a cut id would no longer be found.
                if rejection.code == RejectCode::GuardDenied {
                    let reason = state.scrub_text(&rejection.message, self.sight(e, &viewer));
                    let reason: String = reason.chars().take(REASON_MAX).collect();
                    v["data"]["message"] = json!(reason);
                }
                if rejected.is_none() {
                    rejected = Some((v["data"]["code"].clone(), v["data"]["message"].clone()));
                }
            }
            events.push(v);
        }
        match rejected {
            Some((code, message)) => json!({"accepted": false, "seq": seq, "code": code,
                                            "message": message, "events": events}),
            None => json!({"accepted": true, "seq": seq, "events": events}),
        }
        .to_string()
    }

    /// Fires what is due by now (logged, as a wake would), so an
    /// observation never shows an expiry that should have happened. The
    /// room clock moves only with logged inputs: a replay reaches the same
    /// clock at every line.
    async fn catch_up(&mut self) -> Step<()> {
        if self.finished || self.full() || self.disabled {
            return Ok(());
        }
        if self.room.next_due().is_some_and(|at| at <= self.now()) {
            self.fire_due().await?;
        }
        Ok(())
    }

    /// Fires every timer and expiry due by now, logs them, then lets the
    /// bots move.
    async fn fire_due(&mut self) -> Step<()> {
        let now = self.now();
        self.on_room(|r| r.fire_due(Some(now.saturating_add(1)), &mut std::io::sink()))?
            .map_err(|e| e.to_string())?;
        self.commit(None).await?;
        self.bots().await
    }

    /// Timers, match expiries and disconnect graces that are due.
    async fn wake(&mut self) -> Step<()> {
        if self.finished || self.full() || self.disabled {
            return Ok(());
        }
        let now = Instant::now();
        if self.abandon_at().is_some_and(|at| at <= now) {
            return self.abandon().await;
        }
        let lapsed: Vec<String> = self
            .grace
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(s, _)| s.clone())
            .collect();
        for seat in lapsed {
            self.grace.remove(&seat);
            if let Some(info) = self.seats.get(&seat) {
                let mut a = system(
                    "system.player_disconnected",
                    json!({"playerId": info.player_id}),
                );
                a["at"] = json!(self.now());
                self.on_room(|r| r.submit_json(a, &mut std::io::sink()))?
                    .map_err(|e| e.to_string())?;
            }
        }
        // Committed with the disconnects, even when nothing else is due.
        self.fire_due().await
    }

    /// Aborts the match: nothing entered it for `--abandon-after-ms`
    /// (logged like any input, so recovery replays the abort).
    async fn abandon(&mut self) -> Step<()> {
        let ms = self.hub.options.abandon_after_ms;
        let span = match ms {
            _ if ms.is_multiple_of(3_600_000) => format!("{} h", ms / 3_600_000),
            _ if ms.is_multiple_of(60_000) => format!("{} min", ms / 60_000),
            _ => format!("{ms} ms"),
        };
        let reason = format!("abandoned: nothing happened for {span}");
        let mut a = system("match.abort", json!({ "reason": reason }));
        a["at"] = json!(self.now());
        let seq = self
            .on_room(|r| r.submit_json_seq(a, &mut std::io::sink()))?
            .map_err(|e| e.to_string())?;
        if !self.room.is_over() {
            // The game's on_match_aborted failed (its script.error is in
            // the log): the match goes on, and is not abandoned again.
            tracing::warn!(room = %self.id, seq, "abandoning the match was refused by the game");
            self.abandon_refused = true;
        }
        Ok(self.commit(None).await?)
    }

    /// Bots play while it is their turn (at most a bounded run at a time;
    /// a refused move stops them until the next input).
    async fn bots(&mut self) -> Step<()> {
        let bots: Vec<String> = self
            .seats
            .iter()
            .filter(|(_, i)| i.bot)
            .map(|(s, _)| s.clone())
            .collect();
        if bots.is_empty() {
            return Ok(());
        }
        let mut random_moves = 0;
        for _ in 0..BOT_RUN_MAX {
            if self.full() {
                return Ok(());
            }
            let Some(seat) = bots.iter().find(|s| self.acting(s)).cloned() else {
                return Ok(());
            };
            // The game's own bot when it has one (docs/simulate.md), else
            // the seat's safe default, else one of its legal actions drawn
            // at random. The draw mixes the match's seed with the log's
            // length, so matches differ; the move is logged like any
            // other, so the draw need not be replayed.
            let draw = bot_draw(&self.header, self.next_line);
            let roll = u32::try_from(draw >> 32).unwrap_or(0);
            if self.disabled {
                return Ok(());
            }
            let chosen = self.on_room(|r| {
                r.game_bot(&seat, roll)
                    .or_else(|| r.safe_default_action(&seat))
            })?;
            let chosen = match chosen {
                Some(a) => Some(a),
                // A seat the game keeps acting would draw for ever: a few
                // random moves per input at most.
                None if random_moves >= RANDOM_RUN_MAX => return Ok(()),
                None => {
                    random_moves += 1;
                    let mut state = draw;
                    self.on_room(|r| r.first_legal(&seat, &mut |n| splitmix_order(&mut state, n)))?
                }
            };
            let Some(mut action) = chosen else {
                return Ok(());
            };
            action["at"] = json!(self.now());
            let seq = self
                .on_room(|r| r.submit_json_seq(action, &mut std::io::sink()))?
                .map_err(|e| e.to_string())?;
            let refused = self
                .room
                .peek_events()
                .iter()
                .any(|e| e.seq == seq && matches!(e.kind, EventKind::ActionRejected { .. }));
            self.commit(None).await?;
            if refused {
                return Ok(());
            }
        }
        Ok(())
    }

    fn acting(&self, seat: &str) -> bool {
        !self.room.is_over()
            && self.room.match_layer().is_some_and(|m| {
                m.book
                    .seats
                    .get(seat)
                    .is_some_and(|s| s.participation == Participation::Acting)
            })
    }

    /// Every kept event as each viewer sees it, grouped by sequence.
    fn project(&mut self) -> Vec<(String, u64, String)> {
        let events = self.room.take_events();
        let state = self.room.kernel().state();
        let mut items = Vec::new();
        let mut line = String::new();
        for (key, viewer) in &self.viewers {
            let mut current: Option<(u64, String)> = None;
            for e in &events {
                line.clear();
                if !state.write_event_for(e, self.sight(e, viewer), &mut line) {
                    continue;
                }
                match &mut current {
                    Some((seq, text)) if *seq == e.seq => {
                        text.push('\n');
                        text.push_str(&line);
                    }
                    _ => {
                        if let Some((seq, text)) = current.take() {
                            items.push((key.clone(), seq, text));
                        }
                        current = Some((e.seq, line.clone()));
                    }
                }
            }
            if let Some((seq, text)) = current {
                items.push((key.clone(), seq, text));
            }
        }
        items
    }

    /// Makes what the room did since the last commit durable, then
    /// publishes it.
    async fn commit(&mut self, ack: Option<Ack>) -> Result<(), String> {
        let bytes = std::mem::take(&mut *self.record.borrow_mut());
        let mut lines = String::from_utf8(bytes).map_err(|e| format!("a record line: {e}"))?;
        // Each record line ends with a newline: the count is theirs.
        let n = u64::try_from(lines.matches('\n').count()).unwrap_or(u64::MAX);
        lines.truncate(lines.trim_end_matches('\n').len());
        if n == 0 && ack.is_none() {
            return Ok(());
        }
        let ended = self.room.is_over() && !self.finished;
        let entry = Entry {
            match_id: self.id.clone(),
            first: self.next_line,
            ack,
            finished: if ended { self.public_result() } else { None },
            lines,
        };
        let items = self.project();
        let durable = self.hub.log.append(entry).await;
        match durable {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err("the room log stopped".into()),
        }
        self.next_line = self.next_line.saturating_add(n);
        if n > 0 {
            self.last_input = Instant::now();
        }
        if ended {
            self.mark_finished();
        }
        metrics::counter!("digipology_inputs_logged_total").increment(n);
        self.feed.publish(items, self.tick());
        Ok(())
    }
}

/// How long a finished room stays loaded with no command for it.
const FINISHED_IDLE: std::time::Duration = std::time::Duration::from_secs(60);

/// Most bot moves in a row before the room looks at its channel again.
const BOT_RUN_MAX: usize = 1000;

/// Characters of a guard's reason an answer carries (it is logged with
/// the answer, for retries).
const REASON_MAX: usize = 1000;

/// Random moves bots make in a row before they wait for the next input.
const RANDOM_RUN_MAX: usize = 8;

/// A bot's draw for the move at log line `line` of the match whose header
/// is `header`: splitmix64 from the match's seed mixed with the line.
fn bot_draw(header: &Value, line: u64) -> u64 {
    let seed = header.get("seed").and_then(Value::as_u64).unwrap_or(0);
    let mut state = seed ^ line.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    splitmix64(&mut state)
}
