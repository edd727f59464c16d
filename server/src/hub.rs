//! What the server knows across rooms: its games, its matches (open,
//! running, finished) with their seats and tokens, the room tasks' handles
//! and the threads that run them (docs/server.md).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use digipology_kernel::Viewer;
use digipology_room::{package, Package, Room};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use crate::feed::Feed;
use crate::live::{Begin, Cmd, SeatInfo, Shared, Spec};
use crate::store::{MatchRow, RoomLog, StoreResult};
use crate::Options;

/// A game the server offers.
pub struct Game {
    /// Its id (`game.json`'s `id`).
    pub id: String,
    /// Its package.
    pub package: Package,
    /// Its scripts and modules as they loaded: every room of this game is
    /// built from them, whatever the files hold now (a broken edit under
    /// `--watch` leaves new matches on the code that loaded).
    pub sources: package::Sources,
    /// A digest of its files as loaded ([`Game::stored`]): kept in each
    /// match's header, with the files themselves in the log, so a match
    /// recovers with the version it began with whatever the folder holds.
    pub version: String,
    /// [`Game::stored`], made once.
    files: Arc<str>,
    /// Its public manifest (`digipology manifest`).
    pub manifest: Value,
}

impl Game {
    /// Loads a game folder and checks that a room can be built from it.
    ///
    /// # Errors
    /// The package is broken, with the file and what is wrong.
    pub fn load(dir: &Path) -> Result<Game, String> {
        let package = Package::load(dir).map_err(|e| e.to_string())?;
        let sources = package.sources().map_err(|e| e.to_string())?;
        Game::assemble(package, sources)
    }

    /// A game from a version of its files the log kept ([`Game::stored`]).
    ///
    /// # Errors
    /// The text is not such a version, or it no longer builds a room.
    pub fn from_stored(text: &str) -> Result<Game, String> {
        let kept: Kept = serde_json::from_str(text).map_err(|e| format!("a kept game: {e}"))?;
        let package = Package::from_parts(kept.manifest.into(), kept.json);
        Game::assemble(package, kept.sources)
    }

    /// Its files as the log keeps them (JSON, made once at load).
    pub fn stored(&self) -> Arc<str> {
        self.files.clone()
    }

    fn assemble(package: Package, sources: package::Sources) -> Result<Game, String> {
        let room = package::build_room_from(&package, &sources, 0, (None, None))
            .map_err(|e| e.to_string())?;
        let manifest = digipology_room::matches::manifest(&package, &room);
        let id = package
            .json
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{}: game.json has no id", package.manifest.display()))?
            .to_owned();
        let mut game = Game {
            id,
            package,
            sources,
            version: String::new(),
            files: Arc::from(""),
            manifest,
        };
        let kept = Kept {
            manifest: game.package.manifest.display().to_string(),
            json: game.package.json.clone(),
            sources: game.sources.clone(),
        };
        let files = serde_json::to_string(&kept).map_err(|e| format!("keeping the game: {e}"))?;
        game.files = Arc::from(files);
        game.version = blake3::hash(game.files.as_bytes()).to_hex().to_string();
        Ok(game)
    }

    /// The game's seats, in order.
    pub fn seats(&self) -> Vec<String> {
        self.package.seats()
    }
}

/// A game's files as the log keeps them: where its game.json sat, the
/// manifest (parsed), and every script and module with its text.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    manifest: String,
    json: Value,
    sources: package::Sources,
}

/// Builds a match's room from its header: the game's room with the
/// header's seed and its own match config, recording to `record`.
///
/// # Errors
/// The game or the config cannot be built.
pub fn build(game: &Game, header: &Value, record: Shared) -> Result<Room, String> {
    let seed = header.get("seed").and_then(Value::as_u64).unwrap_or(0);
    let mut room = package::build_room_from(&game.package, &game.sources, seed, (None, None))
        .map_err(|e| e.to_string())?;
    if let Some(m) = header.get("match") {
        let file = Path::new("match");
        let config = package::match_config_from(m, "match", file).map_err(|e| e.to_string())?;
        package::apply_match(&mut room, config, file).map_err(|e| e.to_string())?;
    }
    room.record_to(Box::new(record), header.clone())
        .map_err(|e| e.to_string())?;
    Ok(room)
}

/// A seat of a match.
#[derive(Clone, Debug)]
pub struct Seat {
    /// The seat id.
    pub seat: String,
    /// Its player id (`p1`, `p2`, … in seat order).
    pub player_id: String,
    /// The name its player gave.
    pub name: Option<String>,
    /// A built-in bot plays it.
    pub bot: bool,
    /// Someone holds it.
    pub taken: bool,
}

/// A room task's handle.
#[derive(Clone)]
pub struct Handle {
    /// Its commands.
    pub tx: mpsc::Sender<Cmd>,
    /// What it published.
    pub feed: Arc<Feed>,
}

/// A match as the server knows it.
pub struct Match {
    /// Its id.
    pub id: String,
    /// Its game.
    pub game: Arc<Game>,
    /// Seed and match config (the record header).
    pub header: Value,
    /// Seats in the game's order.
    pub seats: Vec<Seat>,
    /// `open`, `running` or `finished`.
    pub status: &'static str,
    /// Its result once finished.
    pub result: Option<Value>,
    /// A designer's match (its own seed or config, bots anywhere): joined
    /// by its id only, never by `enqueue`, and left off the leaderboard.
    pub designer: bool,
    /// Its room stopped; not loaded again until a restart.
    pub stopped: bool,
    /// When it was made (ms since the epoch).
    pub created_ms: i64,
    /// Its room task, while one runs.
    pub handle: Option<Handle>,
}

impl Match {
    fn row(&self) -> MatchRow {
        let seats: Vec<Value> = self
            .seats
            .iter()
            .map(|s| json!({"seat": s.seat, "playerId": s.player_id, "name": s.name, "bot": s.bot, "taken": s.taken}))
            .collect();
        let mut header = self.header.clone();
        header["designer"] = json!(self.designer);
        MatchRow {
            id: self.id.clone(),
            game_id: self.game.id.clone(),
            header: header.to_string(),
            seats: Value::Array(seats).to_string(),
            status: self.status.to_owned(),
            result: self.result.as_ref().map(Value::to_string),
            created_ms: self.created_ms,
        }
    }

    /// Its room task's handle, while the task runs.
    fn live_handle(&self) -> Option<Handle> {
        self.handle.as_ref().filter(|h| !h.tx.is_closed()).cloned()
    }

    /// How its room begins from what the log holds: replayed, or — a
    /// match marked running whose start never reached the log — started.
    fn begin_from(&self, history: crate::store::History) -> Begin {
        if history.lines.is_empty() {
            return Begin::New(self.players());
        }
        Begin::Recover(history.lines, history.acks)
    }

    fn players(&self) -> Vec<(String, String, Option<String>)> {
        self.seats
            .iter()
            .map(|s| (s.seat.clone(), s.player_id.clone(), s.name.clone()))
            .collect()
    }

    /// The match as listings show it.
    pub fn summary(&self) -> Value {
        let seats: Vec<Value> = self
            .seats
            .iter()
            .map(|s| json!({"seat": s.seat, "playerId": s.player_id, "name": s.name, "bot": s.bot, "taken": s.taken}))
            .collect();
        json!({"matchId": self.id, "gameId": self.game.id, "status": self.status,
               "seats": seats, "result": self.result, "createdMs": self.created_ms,
               "designer": self.designer})
    }
}

#[derive(Default)]
struct Lobby {
    matches: BTreeMap<String, Match>,
    /// Token digest → (match, seat).
    tokens: HashMap<String, (String, String)>,
    /// Matches made so far (part of new ids).
    made: u64,
}

/// Receipts of writes to wait for (each answers once durable).
pub type Receipts = Vec<oneshot::Receiver<StoreResult<()>>>;

/// A refusal from the lobby: HTTP status, code, message.
pub type Refusal = (u16, &'static str, String);

/// Work for a room thread: a room task to start.
struct Work {
    spec: Spec,
    hub: Arc<Hub>,
    feed: Arc<Feed>,
    rx: mpsc::Receiver<Cmd>,
}

/// Commands one room's channel holds before senders are told it is busy.
const ROOM_QUEUE: usize = 1024;

/// The server's shared state.
pub struct Hub {
    /// Its options.
    pub options: Options,
    /// The versions of games' files this process put in the log.
    kept_versions: Mutex<std::collections::HashSet<String>>,
    /// Its games by id (replaced when `--watch` reloads one).
    games: RwLock<BTreeMap<String, Arc<Game>>>,
    /// The durable log.
    pub log: Arc<dyn RoomLog>,
    lobby: Mutex<Lobby>,
    workers: Vec<mpsc::UnboundedSender<Work>>,
    /// Watches the room threads (docs/server.md, A game that stalls).
    pub watchdog: crate::watchdog::Watchdog,
    next_worker: AtomicUsize,
    /// Set once the server stops (docs/server.md, Stopping): connections
    /// close after their request, long polls answer, streams end.
    stopping: tokio::sync::watch::Sender<bool>,
    /// Itself, for the room tasks it starts.
    me: std::sync::Weak<Hub>,
}

/// A new random token (hex of 32 random bytes).
fn new_token() -> Result<String, Refusal> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| (500, "no_randomness", e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A token's digest, as the store keeps it.
pub fn digest(token: &str) -> String {
    blake3::hash(token.as_bytes()).to_hex().to_string()
}

/// RFC 7396: `patch`'s objects merge into `target`'s, its `null`s remove
/// keys, anything else replaces.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

fn unknown(match_id: &str) -> Refusal {
    (404, "unknown_match", format!("no match {match_id:?} here"))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn random_seed() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    // A seed is a JSON number: kept within the integers a double holds.
    u64::from_le_bytes(bytes) >> 11
}

fn locked<'a>(m: &'a Mutex<Lobby>) -> std::sync::MutexGuard<'a, Lobby> {
    // A panic while holding the lobby leaves it as it was between whole
    // steps: keep serving.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a seat is handed when it joins.
pub struct Joined {
    /// The match.
    pub match_id: String,
    /// The seat.
    pub seat: String,
    /// Its player id.
    pub player_id: String,
    /// The seat token (shown once).
    pub token: String,
    /// Receipts of the writes that must be durable before the token is
    /// handed out.
    pub durable: Receipts,
}

impl Hub {
    /// A hub over these games and this log, with its room threads started.
    ///
    /// # Errors
    /// A room thread could not be started.
    pub fn new(
        options: Options,
        games: Vec<Game>,
        log: Arc<dyn RoomLog>,
    ) -> Result<Arc<Hub>, String> {
        let mut workers = Vec::new();
        let watchdog = crate::watchdog::Watchdog::start(std::time::Duration::from_millis(
            options.room_stall_ms.max(1),
        ))?;
        for i in 0..options.room_threads.max(1) {
            let (tx, rx) = mpsc::unbounded_channel::<Work>();
            let slot = watchdog.slot();
            std::thread::Builder::new()
                .name(format!("rooms-{i}"))
                .spawn(move || room_thread(rx, slot))
                .map_err(|e| format!("cannot start a room thread: {e}"))?;
            workers.push(tx);
        }
        Ok(Arc::new_cyclic(|me| Hub {
            options,
            games: RwLock::new(
                games
                    .into_iter()
                    .map(|g| (g.id.clone(), Arc::new(g)))
                    .collect(),
            ),
            log,
            kept_versions: Mutex::new(std::collections::HashSet::new()),
            lobby: Mutex::new(Lobby::default()),
            workers,
            watchdog,
            next_worker: AtomicUsize::new(0),
            stopping: tokio::sync::watch::channel(false).0,
            me: me.clone(),
        }))
    }

    /// Marks the server stopping: every connection closes once its
    /// request is answered, long polls answer now, event streams end.
    pub fn begin_stop(&self) {
        self.stopping.send_replace(true);
    }

    /// Whether the server is stopping.
    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Changes to [`Hub::is_stopping`], to wait for it.
    pub fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// Stops every room running now ([`Cmd::Stop`]) and waits until each
    /// has: what they did is then handed to the log (each input's lines
    /// are durable before its room takes the next command). Answers how
    /// many rooms it stopped.
    pub async fn stop_rooms(&self) -> usize {
        let rooms: Vec<Handle> = locked(&self.lobby)
            .matches
            .values()
            .filter_map(Match::live_handle)
            .collect();
        let mut ends = Vec::with_capacity(rooms.len());
        for room in rooms {
            let (done, end) = oneshot::channel();
            if room.tx.send(Cmd::Stop(done)).await.is_ok() {
                ends.push(end);
            }
        }
        let n = ends.len();
        for end in ends {
            // A room that ended otherwise meanwhile dropped its answer.
            let _ = end.await;
        }
        n
    }

    /// Puts a match that has not run yet, durably, with the version of its
    /// game's files it will run in its header and those files in the log
    /// (once per version), so its recovery builds that version again.
    fn put_row(&self, m: &mut Match) -> Receipts {
        m.header["version"] = json!(m.game.version);
        let mut durable = Vec::new();
        if let Ok(mut kept) = self.kept_versions.lock() {
            if kept.insert(m.game.version.clone()) {
                durable.push(
                    self.log
                        .put_game(m.game.version.clone(), m.game.stored().to_string()),
                );
            }
        }
        durable.push(self.log.put_match(m.row()));
        durable
    }

    fn spawn(&self, m: &mut Match, begin: Begin) -> Result<Handle, Refusal> {
        let hub =
            self.me
                .upgrade()
                .ok_or((503, "shutting_down", "the server is stopping".to_owned()))?;
        let (tx, rx) = mpsc::channel(ROOM_QUEUE);
        let feed = Arc::new(Feed::new());
        let seats = m
            .seats
            .iter()
            .map(|s| {
                (
                    s.seat.clone(),
                    SeatInfo {
                        player_id: s.player_id.clone(),
                        bot: s.bot,
                    },
                )
            })
            .collect();
        let spec = Spec {
            match_id: m.id.clone(),
            game: m.game.clone(),
            header: m.header.clone(),
            seats,
            begin,
            designer: m.designer,
        };
        let i = self.next_worker.fetch_add(1, Ordering::Relaxed) % self.workers.len().max(1);
        let work = Work {
            spec,
            hub,
            feed: feed.clone(),
            rx,
        };
        let sent = self.workers.get(i).map(|w| w.send(work).is_ok());
        if sent != Some(true) {
            return Err((503, "shutting_down", "the room threads stopped".to_owned()));
        }
        let handle = Handle { tx, feed };
        m.handle = Some(handle.clone());
        Ok(handle)
    }
}

thread_local! {
    /// This room thread's slot with the watchdog (none on other threads).
    static ROOM_SLOT: std::cell::RefCell<Option<Arc<crate::watchdog::Slot>>> =
        const { std::cell::RefCell::new(None) };
}

/// The watchdog slot of the room thread this runs on.
pub fn room_slot() -> Option<Arc<crate::watchdog::Slot>> {
    ROOM_SLOT.with(|s| s.borrow().clone())
}

fn room_thread(mut rx: mpsc::UnboundedReceiver<Work>, slot: Arc<crate::watchdog::Slot>) {
    ROOM_SLOT.with(|s| *s.borrow_mut() = Some(slot));
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        tracing::error!("a room thread could not start its runtime");
        return;
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        while let Some(w) = rx.recv().await {
            tokio::task::spawn_local(crate::live::run(w.spec, w.hub, w.feed, w.rx));
        }
    });
}

/// Who holds a seat token.
pub struct Holder {
    /// The match.
    pub match_id: String,
    /// The seat.
    pub seat: String,
    /// The token's digest.
    pub digest: String,
}

/// How a seat asks to join.
#[derive(Default)]
pub struct JoinRequest {
    /// The name to show (and rank on the leaderboard).
    pub name: Option<String>,
    /// A seat in particular.
    pub seat: Option<String>,
}

/// A designer's match: its own seed and match config, bots in some seats.
#[derive(Default)]
pub struct Create {
    /// The seed (random when absent).
    pub seed: Option<u64>,
    /// Changes to the game's match config (a JSON merge patch).
    pub config: Option<Value>,
    /// Seats built-in bots play.
    pub bots: Vec<String>,
}

impl Hub {
    /// A game the server offers.
    ///
    /// # Errors
    /// No such game here (404).
    pub fn game(&self, id: &str) -> Result<Arc<Game>, Refusal> {
        self.games
            .read()
            .ok()
            .and_then(|g| g.get(id).cloned())
            .ok_or_else(|| (404, "unknown_game", format!("no game {id:?} here")))
    }

    /// Every game the server offers, by id.
    pub fn games(&self) -> Vec<Arc<Game>> {
        self.games
            .read()
            .map(|g| g.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Offers `game` in place of the game with its id (`--watch`): new
    /// matches and rooms loaded from now on run it. Answers the rooms of
    /// that game running now, to be told.
    pub fn replace_game(&self, game: Game) -> (Arc<Game>, Vec<Handle>) {
        let game = Arc::new(game);
        if let Ok(mut games) = self.games.write() {
            games.insert(game.id.clone(), game.clone());
        }
        let mut lobby = locked(&self.lobby);
        let mut live = Vec::new();
        // A finished match keeps the game it was played with: its log
        // replays with that one (to be watched again, or replayed).
        for m in lobby
            .matches
            .values_mut()
            .filter(|m| m.game.id == game.id && m.status != "finished")
        {
            m.game = game.clone();
            live.extend(m.live_handle());
        }
        (game, live)
    }

    /// The rooms of a game running now.
    pub fn live_rooms(&self, game_id: &str) -> Vec<Handle> {
        locked(&self.lobby)
            .matches
            .values()
            .filter(|m| m.game.id == game_id)
            .filter_map(Match::live_handle)
            .collect()
    }

    /// A past moment of a match as `viewer` saw it: the match rebuilt from
    /// its log up to sequence `seq` (its last when beyond), observed then.
    /// Answers `{seq, last, observation}`. Reads the log and replays it
    /// from the start, every state hash checked (a frame is never a
    /// history that did not happen): call it off the async threads.
    ///
    /// # Errors
    /// No such match, it has not started or has stopped, or its log does
    /// not replay to the same hashes.
    pub fn frame(&self, match_id: &str, viewer: &Viewer, seq: u64) -> Result<Value, Refusal> {
        let (game, header) = {
            let lobby = locked(&self.lobby);
            let m = lobby
                .matches
                .get(match_id)
                .ok_or_else(|| unknown(match_id))?;
            if m.status == "open" {
                return Err((409, "not_started", "this match waits for players".into()));
            }
            if m.stopped {
                return Err((503, "room_unavailable", "this room stopped".into()));
            }
            (m.game.clone(), m.header.clone())
        };
        let history = self
            .log
            .histories(&[match_id.to_owned()])
            .map_err(|e| (500, "store", e))?
            .remove(match_id)
            .unwrap_or_default();
        let unreplayable = |e: String| {
            (
                503,
                "room_unavailable",
                format!("the log does not replay: {e}"),
            )
        };
        let record = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut room = build(&game, &header, Shared(record.clone())).map_err(unreplayable)?;
        let mut last = 0;
        let mut shown = None;
        crate::live::replay_log(&mut room, &history.lines, true, |room, s| {
            // The record the replay writes is not kept.
            record.borrow_mut().clear();
            last = s;
            if shown.is_none() && s >= seq {
                shown = Some(room.observation_at(viewer, room.clock()));
            }
        })
        .map_err(|e| match e {
            crate::live::Unreplayed::Line(_, e) => unreplayable(e),
            crate::live::Unreplayed::Hash { seq, .. } => unreplayable(format!(
                "sequence {seq} does not reach the logged state (the game's files changed since)"
            )),
            e @ crate::live::Unreplayed::Stalled(_) => unreplayable(e.to_string()),
        })?;
        let observation = shown.unwrap_or_else(|| room.observation_at(viewer, room.clock()));
        Ok(json!({"seq": observation["seq"], "last": last, "observation": observation}))
    }

    /// Rooms whose task runs.
    fn loaded(lobby: &Lobby) -> usize {
        lobby
            .matches
            .values()
            .filter(|m| m.live_handle().is_some())
            .count()
    }

    /// Matches by status, and rooms loaded (for the metrics).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let lobby = locked(&self.lobby);
        let of = |s: &str| lobby.matches.values().filter(|m| m.status == s).count();
        (
            of("open"),
            of("running"),
            of("finished"),
            Self::loaded(&lobby),
        )
    }

    /// Matches that count against the room limit: open or running
    /// (finished ones loaded again have a limit of their own).
    fn in_use(lobby: &Lobby) -> usize {
        lobby
            .matches
            .values()
            .filter(|m| m.status != "finished")
            .count()
    }

    /// Forgets designer matches nobody joined in time.
    fn purge(lobby: &mut Lobby) {
        let now = now_ms();
        lobby.matches.retain(|_, m| {
            let unjoined =
                m.designer && m.status == "open" && m.seats.iter().all(|s| s.bot || !s.taken);
            !(unjoined && now.saturating_sub(m.created_ms) > UNJOINED_MS)
        });
    }

    /// Makes a match (not yet started): checks its config, fills its bot
    /// seats, keeps it durably. A designer's match is one `create` made
    /// (else `enqueue`).
    fn make(
        &self,
        lobby: &mut Lobby,
        game: Arc<Game>,
        create: Create,
        designer: bool,
    ) -> Result<(String, Receipts), Refusal> {
        Self::purge(lobby);
        if Self::in_use(lobby) >= self.options.max_rooms {
            return Err((
                503,
                "room_limit",
                format!(
                    "this server holds at most {} open or running matches",
                    self.options.max_rooms
                ),
            ));
        }
        let seats = game.seats();
        for b in &create.bots {
            if !seats.contains(b) {
                return Err((400, "unknown_seat", format!("the game has no seat {b:?}")));
            }
        }
        let mut header = json!({"game": game.package.dir.display().to_string(), "gameId": game.id,
                                "seed": create.seed.unwrap_or_else(random_seed)});
        if let Some(over) = create.config {
            // Overrides on the game's own config (a JSON merge patch:
            // objects merge, `null` removes a key), so a designer changes
            // one limit without dropping the game's phases or resources.
            let mut config = game
                .package
                .json
                .get("match")
                .cloned()
                .unwrap_or_else(|| json!({}));
            merge_patch(&mut config, &over);
            package::match_config_from(&config, "match", Path::new("match"))
                .map_err(|e| (400, "invalid_match", e.to_string()))?;
            header["match"] = config;
        }
        lobby.made += 1;
        let id = format!("m{}-{}", lobby.made, &new_token()?[..8]);
        let m = Match {
            id: id.clone(),
            seats: seats
                .iter()
                .enumerate()
                .map(|(i, s)| Seat {
                    seat: s.clone(),
                    player_id: format!("p{}", i + 1),
                    name: create.bots.contains(s).then(|| format!("bot {s}")),
                    bot: create.bots.contains(s),
                    taken: create.bots.contains(s),
                })
                .collect(),
            game,
            header,
            status: "open",
            result: None,
            designer,
            stopped: false,
            created_ms: now_ms(),
            handle: None,
        };
        let mut m = m;
        let durable = self.put_row(&mut m);
        lobby.matches.insert(id.clone(), m);
        Ok((id, durable))
    }

    /// A designer's match, joined later by its id.
    ///
    /// # Errors
    /// An unknown game, a bad config or seat, too many matches.
    pub fn create(&self, game_id: &str, create: Create) -> Result<(Value, Receipts), Refusal> {
        let game = self.game(game_id)?;
        let mut lobby = locked(&self.lobby);
        let (id, mut durable) = self.make(&mut lobby, game, create, true)?;
        let m = lobby
            .matches
            .get_mut(&id)
            .ok_or((500, "internal", "lost".to_owned()))?;
        durable.extend(self.start_if_full(m)?);
        Ok((m.summary(), durable))
    }

    /// Seats a player in the oldest open match `enqueue` made for the game,
    /// or a new one (with bots in every other seat when `bots`).
    ///
    /// # Errors
    /// An unknown game, too many matches.
    pub fn enqueue(&self, game_id: &str, req: JoinRequest, bots: bool) -> Result<Joined, Refusal> {
        let game = self.game(game_id)?;
        let mut lobby = locked(&self.lobby);
        // The oldest open match (ids count up: `m9-…` before `m10-…`).
        let open = lobby
            .matches
            .values()
            .filter(|m| {
                !bots
                    && !m.designer
                    && m.status == "open"
                    && m.game.id == game.id
                    && m.seats.iter().any(|s| !s.taken)
            })
            .min_by_key(|m| (m.created_ms, m.id.len(), m.id.clone()))
            .map(|m| m.id.clone());
        let (id, mut durable) = match open {
            Some(id) => (id, Vec::new()),
            None => {
                let others: Vec<String> = if bots {
                    game.seats().into_iter().skip(1).collect()
                } else {
                    Vec::new()
                };
                let create = Create {
                    bots: others,
                    ..Create::default()
                };
                self.make(&mut lobby, game, create, false)?
            }
        };
        let mut joined = self.seat_in(&mut lobby, &id, req)?;
        durable.append(&mut joined.durable);
        joined.durable = durable;
        Ok(joined)
    }

    /// Seats a player in a given match.
    ///
    /// # Errors
    /// No such match, no free seat.
    pub fn join(&self, match_id: &str, req: JoinRequest) -> Result<Joined, Refusal> {
        let mut lobby = locked(&self.lobby);
        self.seat_in(&mut lobby, match_id, req)
    }

    fn seat_in(
        &self,
        lobby: &mut Lobby,
        match_id: &str,
        req: JoinRequest,
    ) -> Result<Joined, Refusal> {
        let m = lobby
            .matches
            .get_mut(match_id)
            .ok_or_else(|| unknown(match_id))?;
        if m.status != "open" {
            return Err((
                409,
                "match_started",
                "every seat of this match is taken".to_owned(),
            ));
        }
        if let Some(want) = &req.seat {
            if !m.seats.iter().any(|s| s.seat == *want) {
                return Err((
                    400,
                    "unknown_seat",
                    format!("the game has no seat {want:?}"),
                ));
            }
        }
        let seat = m
            .seats
            .iter_mut()
            .find(|s| !s.taken && req.seat.as_ref().is_none_or(|want| *want == s.seat))
            .ok_or_else(|| {
                (
                    409,
                    "seat_taken",
                    "no such free seat in this match".to_owned(),
                )
            })?;
        seat.taken = true;
        seat.name = req.name;
        let token = new_token()?;
        let d = digest(&token);
        let joined = Joined {
            match_id: m.id.clone(),
            seat: seat.seat.clone(),
            player_id: seat.player_id.clone(),
            token,
            durable: Vec::new(),
        };
        // The token is queued before the row that marks the seat taken:
        // the writer commits in order, so a log whose row says the seat
        // is taken holds its token too, whenever the server is killed
        // (the start refuses a taken seat without one: docs/server.md,
        // Log damage).
        let mut durable = vec![self
            .log
            .put_token(d.clone(), m.id.clone(), joined.seat.clone())];
        durable.extend(self.put_row(m));
        durable.extend(self.start_if_full(m)?);
        lobby
            .tokens
            .insert(d, (joined.match_id.clone(), joined.seat.clone()));
        Ok(Joined { durable, ..joined })
    }

    /// Starts a match whose seats are all taken.
    fn start_if_full(
        &self,
        m: &mut Match,
    ) -> Result<Vec<oneshot::Receiver<StoreResult<()>>>, Refusal> {
        if m.status != "open" || m.seats.iter().any(|s| !s.taken) {
            return Ok(Vec::new());
        }
        m.status = "running";
        let durable = self.put_row(m);
        let players = m
            .seats
            .iter()
            .map(|s| (s.seat.clone(), s.player_id.clone(), s.name.clone()))
            .collect();
        self.spawn(m, Begin::New(players))?;
        Ok(durable)
    }

    /// The match and seat a token stands for, with the token's digest
    /// (what the server keeps of it, and keys its rate bucket).
    pub fn token(&self, token: &str) -> Option<Holder> {
        let digest = digest(token);
        let (match_id, seat) = locked(&self.lobby).tokens.get(&digest).cloned()?;
        Some(Holder {
            match_id,
            seat,
            digest,
        })
    }

    /// A match's room task, started again from the log for a finished
    /// match whose task has ended.
    ///
    /// # Errors
    /// No such match, or it has not started.
    pub fn handle(&self, match_id: &str) -> Result<Handle, Refusal> {
        if let Some(h) = self.loadable(&locked(&self.lobby), match_id)? {
            return Ok(h);
        }
        // The log is read outside the lobby's lock: with no index per
        // match, reading one match's lines scans it.
        let mut all = self
            .log
            .histories(&[match_id.to_owned()])
            .map_err(|e| (500, "store", e))?;
        let history = all.remove(match_id).unwrap_or_default();
        let mut lobby = locked(&self.lobby);
        // Things may have changed meanwhile: loaded, stopped, the limit.
        if let Some(h) = self.loadable(&lobby, match_id)? {
            return Ok(h);
        }
        let m = lobby
            .matches
            .get_mut(match_id)
            .ok_or_else(|| unknown(match_id))?;
        let begin = m.begin_from(history);
        self.spawn(m, begin)
    }

    /// A match's running room, or `None` when it may be loaded from the
    /// log; refused when it is unknown, stopped, waiting for players, or
    /// finished with too many finished rooms loaded.
    fn loadable(&self, lobby: &Lobby, match_id: &str) -> Result<Option<Handle>, Refusal> {
        let m = lobby
            .matches
            .get(match_id)
            .ok_or_else(|| unknown(match_id))?;
        if let Some(h) = m.live_handle() {
            return Ok(Some(h));
        }
        if m.stopped {
            return Err((
                503,
                "room_unavailable",
                "this room stopped (the server's log says why); the next start tries again"
                    .to_owned(),
            ));
        }
        if m.status == "open" {
            return Err((
                409,
                "not_started",
                "this match waits for players".to_owned(),
            ));
        }
        let finished_loaded = lobby
            .matches
            .values()
            .filter(|m| m.status == "finished" && m.live_handle().is_some())
            .count();
        if m.status == "finished" && finished_loaded >= self.options.max_rooms {
            return Err((
                503,
                "room_limit",
                "too many finished matches are loaded; try again in a minute".to_owned(),
            ));
        }
        Ok(None)
    }

    /// Marks a match's room stopped (its log failed, or it did not replay):
    /// not loaded again until the server restarts.
    pub fn stopped(&self, match_id: &str) {
        if let Some(m) = locked(&self.lobby).matches.get_mut(match_id) {
            m.stopped = true;
        }
    }

    /// Records a match's result (its room committed it durably).
    pub fn finished(&self, match_id: &str, result: Option<String>) {
        let mut lobby = locked(&self.lobby);
        if let Some(m) = lobby.matches.get_mut(match_id) {
            m.status = "finished";
            m.result = result.and_then(|r| serde_json::from_str(&r).ok());
            metrics::counter!("digipology_matches_finished_total").increment(1);
        }
    }

    /// The player id of a match's seat.
    pub fn player_of(&self, match_id: &str, seat: &str) -> Option<String> {
        let lobby = locked(&self.lobby);
        let m = lobby.matches.get(match_id)?;
        m.seats
            .iter()
            .find(|s| s.seat == seat)
            .map(|s| s.player_id.clone())
    }

    /// A match's summary.
    pub fn summary(&self, match_id: &str) -> Option<Value> {
        locked(&self.lobby)
            .matches
            .get(match_id)
            .map(Match::summary)
    }

    /// A game's matches, newest first, with a status when given, at most
    /// `limit`, those listed after the match `before` when given.
    ///
    /// # Errors
    /// `before` names no match of the game.
    pub fn matches_of(
        &self,
        game_id: &str,
        status: Option<&str>,
        limit: usize,
        before: Option<&str>,
    ) -> Result<Vec<Value>, Refusal> {
        let lobby = locked(&self.lobby);
        let key = |m: &Match| (m.created_ms, m.id.clone());
        let cursor = match before {
            None => None,
            Some(id) => Some(
                lobby
                    .matches
                    .get(id)
                    .filter(|m| m.game.id == game_id)
                    .map(key)
                    .ok_or_else(|| {
                        (
                            400,
                            "invalid_value",
                            format!("before: no match {id:?} of this game"),
                        )
                    })?,
            ),
        };
        let mut list: Vec<&Match> = lobby
            .matches
            .values()
            .filter(|m| m.game.id == game_id && status.is_none_or(|s| s == m.status))
            .filter(|m| cursor.as_ref().is_none_or(|c| key(m) < *c))
            .collect();
        list.sort_by_key(|m| std::cmp::Reverse(key(m)));
        Ok(list.into_iter().take(limit).map(Match::summary).collect())
    }

    /// A game's leaderboard over its finished matches: per name, matches,
    /// wins (the best score alone: the highest, or the lowest when the
    /// game's `match.scoring` says so), draws (shared), losses, aborted.
    pub fn leaderboard(&self, game_id: &str) -> Vec<Value> {
        let lobby = locked(&self.lobby);
        let mut rows: BTreeMap<String, [u64; 5]> = BTreeMap::new();
        for m in lobby
            .matches
            .values()
            .filter(|m| m.game.id == game_id && m.status == "finished" && !m.designer)
        {
            standings(m, &mut rows);
        }
        let mut list: Vec<(String, [u64; 5])> = rows.into_iter().collect();
        list.sort_by(|a, b| (b.1[1], b.1[2]).cmp(&(a.1[1], a.1[2])).then(a.0.cmp(&b.0)));
        list.into_iter()
            .map(|(name, [played, wins, draws, losses, aborted])| {
                json!({"name": name, "played": played, "wins": wins, "draws": draws,
                       "losses": losses, "aborted": aborted})
            })
            .collect()
    }
}

/// How long a designer's match nobody joined is kept (ms).
const UNJOINED_MS: i64 = 10 * 60 * 1000;

fn standings(m: &Match, rows: &mut BTreeMap<String, [u64; 5]>) {
    use digipology_room::matches::{Scoring, Standing};
    let scores = m.result.as_ref().and_then(|r| r.get("scores"));
    // The seats with the best score, by the scoring the result names (the
    // highest wins when it names none); only the match's seats count.
    let winners = m.result.as_ref().map(|r| {
        let seated = scores
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(seat, _)| m.seats.iter().any(|s| &s.seat == *seat));
        Scoring::of_result(r).winners(seated)
    });
    // Ranked: players who gave a name (bots and nameless players play,
    // and count for the others, but have no row).
    for s in m.seats.iter().filter(|s| !s.bot) {
        let Some(name) = &s.name else { continue };
        let row = rows.entry(name.clone()).or_default();
        row[0] += 1;
        let (Some(_), Some(winners)) = (scores, &winners) else {
            row[4] += 1;
            continue;
        };
        match Standing::of(&s.seat, winners) {
            Standing::Win => row[1] += 1,
            Standing::Draw => row[2] += 1,
            Standing::Loss => row[3] += 1,
        }
    }
}

impl Hub {
    /// Takes back every match the log holds: open ones wait for players
    /// again (or start, when their seats were all taken), running ones are
    /// recovered (replayed, hashes verified) and go on, finished ones are
    /// listed. Returns how many were recovered.
    ///
    /// # Errors
    /// The log cannot be read.
    pub fn recover_all(&self) -> Result<usize, String> {
        let rows = self.log.matches()?;
        let tokens = self.log.tokens()?;
        let mut lobby = locked(&self.lobby);
        let mut versions = HashMap::new();
        for row in rows {
            if let Some(m) = self.match_from_row(row, &mut versions)? {
                lobby.made += 1;
                lobby.matches.insert(m.id.clone(), m);
            }
        }
        for (d, m, s) in tokens {
            lobby.tokens.insert(d, (m, s));
        }
        let running: Vec<String> = lobby
            .matches
            .values()
            .filter(|m| m.status == "running")
            .map(|m| m.id.clone())
            .collect();
        let mut histories = self.log.histories(&running)?;
        for id in &running {
            let h = histories.remove(id).unwrap_or_default();
            if let Some(m) = lobby.matches.get_mut(id) {
                let begin = m.begin_from(h);
                self.spawn(m, begin).map_err(|(_, _, m)| m)?;
            }
        }
        // A match whose last seat was taken just before a crash.
        for m in lobby.matches.values_mut().filter(|m| m.status == "open") {
            self.start_if_full(m).map_err(|(_, _, m)| m)?;
        }
        Ok(running.len())
    }

    /// The version `v` of a game's files as the log kept it (built once per
    /// recovery), or `None` when the log does not hold it or it no longer
    /// builds (the match then runs the files of now, and says so if they
    /// do not replay it).
    fn kept_version(
        &self,
        v: &str,
        versions: &mut HashMap<String, Arc<Game>>,
    ) -> Option<Arc<Game>> {
        if let Some(g) = versions.get(v) {
            return Some(g.clone());
        }
        let built = self
            .log
            .game_files(v)
            .ok()
            .flatten()
            .map(|t| Game::from_stored(&t));
        match built {
            Some(Ok(g)) if g.version != v => {
                tracing::warn!(version = %v, "a kept version of a game does not match its digest: not used");
                None
            }
            Some(Ok(g)) => {
                let g = Arc::new(g);
                versions.insert(v.to_owned(), g.clone());
                Some(g)
            }
            Some(Err(e)) => {
                tracing::warn!(version = %v, "a kept version of a game does not build: {e}");
                None
            }
            None => None,
        }
    }

    /// A match as its row holds it (`None`: a game this server does not
    /// serve now).
    fn match_from_row(
        &self,
        row: MatchRow,
        versions: &mut HashMap<String, Arc<Game>>,
    ) -> Result<Option<Match>, String> {
        let Ok(game) = self.game(&row.game_id) else {
            tracing::warn!(room = %row.id, "match of game {:?}, which this server does not serve: left alone", row.game_id);
            return Ok(None);
        };
        let mut header: Value = serde_json::from_str(&row.header)
            .map_err(|e| format!("match {}: its header: {e}", row.id))?;
        // A match that began runs the files it began with; one still
        // waiting for players will begin with the files of now.
        let game = match header.get("version").and_then(Value::as_str) {
            Some(v) if v != game.version && row.status != "open" => {
                self.kept_version(v, versions).unwrap_or(game)
            }
            _ => game,
        };
        let designer = header
            .get("designer")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if let Some(o) = header.as_object_mut() {
            o.remove("designer");
        }
        let seats: Vec<Value> = serde_json::from_str(&row.seats)
            .map_err(|e| format!("match {}: its seats: {e}", row.id))?;
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let flag = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
        let seats = seats
            .iter()
            .map(|v| Seat {
                seat: text(v, "seat").unwrap_or_default(),
                player_id: text(v, "playerId").unwrap_or_default(),
                name: text(v, "name"),
                bot: flag(v, "bot"),
                taken: flag(v, "taken"),
            })
            .collect();
        let status = match row.status.as_str() {
            "running" => "running",
            "finished" => "finished",
            _ => "open",
        };
        Ok(Some(Match {
            id: row.id,
            game,
            header,
            seats,
            status,
            result: row.result.and_then(|r| serde_json::from_str(&r).ok()),
            designer,
            stopped: false,
            created_ms: row.created_ms,
            handle: None,
        }))
    }
}
