//! `digipology simulate` (docs/simulate.md): plays many matches of a game
//! with bots, on every core, and reports what a designer balances with —
//! who wins, how long matches last, what gets rejected, which scripts
//! fail, whose clocks run out. Match `i` runs on seed `S + i` alone, so
//! the report is the same whatever the number of jobs, and any match can
//! be played again and replayed exactly.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use digipology_kernel::EventKind;
use digipology_room::matches::config::number_cmp;
use digipology_room::matches::{MatchConfig, Scoring, Standing};
use digipology_room::{error::CliError, package, Package, Room};
use serde_json::{json, Value};

/// How a seat's bot plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bot {
    /// Uniformly among the observation's legal actions (its safe default
    /// when it has none).
    Random,
    /// Its safe default (docs/match.md).
    Safe,
    /// Uniformly among every candidate action, legal or not — answers to
    /// its prompts and the obvious action on each piece it sees — so
    /// rejections and the script errors behind them show up.
    Fuzz,
    /// Never acts: its clocks run out and the room plays its safe default.
    Idle,
    /// The game's own bot, its Lua `bot(seat, roll)`; `random` when it
    /// has none or passes.
    Game,
}

impl Bot {
    fn parse(text: &str) -> Result<Bot, String> {
        match text {
            "random" => Ok(Bot::Random),
            "safe" => Ok(Bot::Safe),
            "idle" => Ok(Bot::Idle),
            "fuzz" => Ok(Bot::Fuzz),
            "game" => Ok(Bot::Game),
            other => Err(format!(
                "unknown bot {other:?}: random, safe, fuzz, idle or game"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Bot::Random => "random",
            Bot::Safe => "safe",
            Bot::Idle => "idle",
            Bot::Fuzz => "fuzz",
            Bot::Game => "game",
        }
    }
}

/// What to simulate (the command's flags).
pub struct Options {
    /// The game folder.
    pub game: PathBuf,
    /// How many matches.
    pub matches: u64,
    /// `random`, or `SEAT=KIND,…` (seats not named play `random`).
    pub bots: String,
    /// Match `i` plays on seed `seed + i`.
    pub seed: u64,
    /// Threads (0: one per core).
    pub jobs: usize,
    /// A match config to play under instead of game.json's.
    pub match_config: Option<PathBuf>,
    /// Where the report and the failed matches' records go.
    pub out: Option<PathBuf>,
    /// Expectations (`no-script-errors`, `all-finish`,
    /// `win-rate:SEAT:LO:HI`).
    pub asserts: Vec<String>,
    /// Inputs after which a match counts as never ending.
    pub max_actions: u64,
    /// Virtual milliseconds a bot takes to act.
    pub think_ms: i64,
    /// The longest one bot move (or clock jump) may run, in real
    /// milliseconds, before the match is stopped as `hung`.
    pub stall_ms: u64,
}

/// The status of a match whose game stalled: one move ran longer than
/// `--stall-ms` and the watchdog stopped it.
const HUNG: &str = "hung";

thread_local! {
    /// This simulation thread's slot with the watchdog.
    static SLOT: std::cell::RefCell<Option<std::sync::Arc<digipology_server::watchdog::Slot>>> =
        const { std::cell::RefCell::new(None) };
}

/// Marks this thread busy with `room`'s next move for the watchdog, until
/// the guard is dropped (no guard without a watchdog or scripts).
fn watched(room: &Room) -> Option<WatchedMove> {
    let slot = SLOT.with(|s| s.borrow().clone())?;
    let switch = room.interrupt()?;
    Some(WatchedMove { slot, switch })
}

/// A move the watchdog watches ([`watched`]).
struct WatchedMove {
    slot: std::sync::Arc<digipology_server::watchdog::Slot>,
    switch: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl WatchedMove {
    fn enter(&self) -> digipology_server::watchdog::Busy<'_> {
        self.slot.enter(self.switch.clone())
    }
}

/// One match, as the report counts it.
#[derive(Clone, Debug, Default)]
struct Outcome {
    seed: u64,
    /// `match_over`, `match_aborted`, `unfinished` (hit `--max-actions`),
    /// `stalled` (nobody could act and nothing was due) or `hung` (a move
    /// ran longer than `--stall-ms`).
    status: String,
    /// Seat → its score (a number), when the match reached `match_over`.
    scores: BTreeMap<String, Value>,
    /// The seats with the best score (docs/match.md, Results).
    winners: Vec<String>,
    actions: u64,
    virtual_ms: i64,
    /// (action type, code) → count.
    rejections: BTreeMap<(String, String), u64>,
    /// `script:line` → (count, first message).
    script_errors: BTreeMap<String, (u64, String)>,
    /// (expiry kind, seat) → count.
    expiries: BTreeMap<(String, String), u64>,
    /// Seat → safe defaults the room played for it.
    safe_defaults: BTreeMap<String, u64>,
    /// A match function's failure (the room's words) → count.
    faults: BTreeMap<String, u64>,
}

impl Outcome {
    fn failed(&self) -> bool {
        !self.script_errors.is_empty()
            || !self.faults.is_empty()
            || matches!(
                self.status.as_str(),
                "unfinished" | "stalled" | "crashed" | HUNG
            )
    }
}

/// What a seat's bot does next.
enum Move {
    /// It played an action already (committed by the room).
    Played,
    /// This action, to submit.
    Submit(Value),
    /// Nobody moves now.
    Pass,
}

/// A deterministic stream of numbers for one match's bots (splitmix64).
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        digipology_kernel::rng::splitmix64(&mut self.0)
    }

    /// A uniformly random order of `0..n` (Fisher–Yates).
    fn order(&mut self, n: usize) -> Vec<usize> {
        digipology_kernel::rng::splitmix_order(&mut self.0, n)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        let n = u64::try_from(n).unwrap_or(u64::MAX).max(1);
        usize::try_from(self.next() % n).unwrap_or(0)
    }
}

/// What every match shares.
struct Plan<'a> {
    package: &'a Package,
    /// The table as game.json builds it (on seed 0): each match starts
    /// from a copy under its own seed.
    table: digipology_kernel::State,
    config: Option<(MatchConfig, PathBuf)>,
    /// Which end of the scores wins (the config's `scoring`).
    scoring: Scoring,
    seats: Vec<String>,
    bots: BTreeMap<String, Bot>,
    max_actions: u64,
    think_ms: i64,
    /// `--stall-ms`, for the hung match's fault.
    stall_ms: u64,
}

impl Plan<'_> {
    /// The starting table of the match on `seed`.
    fn table(&self, seed: u64) -> digipology_kernel::State {
        let mut table = self.table.clone();
        table.reseed(seed);
        table
    }

    /// A new room of the match on `seed`, under the plan's match config
    /// (not started yet: [`Plan::play`] starts it).
    fn room(&self, seed: u64) -> Result<Room, String> {
        let table = self.table(seed);
        let host = self
            .package
            .script_host(&table, (None, None))
            .map_err(|e| e.to_string())?;
        let mut room = self
            .package
            .new_room(table, host, true)
            .map_err(|e| e.to_string())?;
        let config = match &self.config {
            Some((config, _)) => Some(config.clone()),
            None => self.package.match_config().map_err(|e| e.to_string())?,
        };
        if let Some(config) = config {
            room.set_match(config)?;
        }
        Ok(room)
    }

    /// Plays the match on `seed` to its end, or to `max_actions`, in
    /// `room` (new, or [`Room::reset`] to the match's table).
    fn play(&self, seed: u64, room: &mut Room) -> Result<Outcome, String> {
        let mut out = Outcome {
            seed,
            ..Outcome::default()
        };
        let mut sink = io::sink();
        // Only the kinds `tally` counts.
        room.keep_events_of(|k| {
            matches!(
                k,
                EventKind::ActionRejected { .. }
                    | EventKind::ScriptError { .. }
                    | EventKind::MatchHostEvent { .. }
            )
        });
        room.no_event_lines();
        // Each step (the start, then each move or clock jump) is watched:
        // one that runs past `--stall-ms` has its game stopped.
        let watch = watched(room);
        let busy = || watch.as_ref().map(WatchedMove::enter);
        {
            let _busy = busy();
            room.start(&mut sink).map_err(|e| e.to_string())?;
            room.seat_players(
                &crate::default_players(self.seats.len()),
                &self.seats,
                &mut sink,
            )
            .map_err(|e| e.to_string())?;
        }
        let mut dice = Dice(seed ^ 0x5eed_b075_d1ce_0001);
        let mut turn = 0usize;
        loop {
            let _busy = busy();
            tally(room, &mut out);
            if room.interrupted() || room.is_over() {
                break;
            }
            if out.actions >= self.max_actions {
                out.status = "unfinished".into();
                break;
            }
            match self.next_action(room, &mut dice, &mut turn)? {
                Move::Played => {
                    out.actions += 1;
                    continue;
                }
                Move::Submit(action) => {
                    room.submit_json(action, &mut sink)
                        .map_err(|e| e.to_string())?;
                    out.actions += 1;
                    continue;
                }
                Move::Pass => {}
            }
            // Nobody acts: time passes to what is due next.
            let Some(due) = room.next_due() else {
                out.status = "stalled".into();
                why_stalled(room, &mut out);
                break;
            };
            let wait = due.saturating_sub(room.clock()).max(0);
            room.advance(wait, &mut sink).map_err(|e| e.to_string())?;
            out.actions += 1;
        }
        // What the last tries left (a failing legal_actions before a stall).
        tally(room, &mut out);
        if room.interrupted() {
            // Stopped by the watchdog, whatever the match looked like then.
            out.status = HUNG.into();
            let line = format!(
                "the game stalled: a move ran longer than --stall-ms allows ({} ms), and the match was stopped",
                self.stall_ms
            );
            count_fault(&mut out, &line);
        }
        out.virtual_ms = room.clock();
        if out.status.is_empty() {
            read_result(room, &mut out);
        }
        Ok(out)
    }

    /// The next bot move: the acting seats take turns (in seat order,
    /// starting after the last one that moved).
    fn next_action(
        &self,
        room: &mut Room,
        dice: &mut Dice,
        turn: &mut usize,
    ) -> Result<Move, String> {
        let acting: Vec<String> = room
            .match_layer()
            .map(|m| m.acting())
            .unwrap_or_else(|| self.seats.clone());
        // Seat order, starting after the seat that moved last (`turn`).
        let n = self.seats.len();
        for k in 0..n {
            let i = (*turn + k) % n;
            let seat = &self.seats[i];
            if !acting.contains(seat) {
                continue;
            }
            let bot = self.bots.get(seat).copied().unwrap_or(Bot::Random);
            let at = room.clock().saturating_add(self.think_ms);
            if bot == Bot::Random {
                // Played at once when the room can try its candidates
                // itself (see Room::play_first_legal), else chosen below.
                let played = room
                    .play_first_legal(seat, at, &mut |n| dice.order(n), &mut io::sink())
                    .map_err(|e| e.to_string())?;
                match played {
                    Some(true) => {
                        *turn = i + 1;
                        return Ok(Move::Played);
                    }
                    Some(false) => match room.safe_default_action(seat) {
                        Some(mut action) if action.is_object() => {
                            *turn = i + 1;
                            action["at"] = json!(at);
                            return Ok(Move::Submit(action));
                        }
                        _ => continue,
                    },
                    None => {}
                }
            }
            let Some(mut action) = self.choose(room, seat, bot, dice) else {
                continue;
            };
            if !action.is_object() {
                continue;
            }
            *turn = i + 1;
            action["at"] = json!(at);
            return Ok(Move::Submit(action));
        }
        Ok(Move::Pass)
    }

    fn choose(&self, room: &mut Room, seat: &str, bot: Bot, dice: &mut Dice) -> Option<Value> {
        match bot {
            Bot::Idle => None,
            Bot::Game => {
                let roll = u32::try_from(dice.next() >> 33).unwrap_or(0);
                room.game_bot(seat, roll)
                    .or_else(|| self.choose(room, seat, Bot::Random, dice))
            }
            Bot::Safe => room.safe_default_action(seat),
            Bot::Random | Bot::Fuzz => {
                let chosen = if bot == Bot::Fuzz {
                    // One candidate, drawn uniformly: only the first of the
                    // order is used.
                    room.first_candidate(seat, &mut |n| {
                        (n > 0).then(|| dice.below(n)).into_iter().collect()
                    })
                } else {
                    // The first legal one in a random order: uniform among
                    // the legal ones, dry-running only those before it.
                    room.first_legal(seat, &mut |n| dice.order(n))
                };
                chosen.or_else(|| room.safe_default_action(seat))
            }
        }
    }
}

/// Counts the events and match-function faults since the last call.
fn tally(room: &mut Room, out: &mut Outcome) {
    for seat in room.take_safe_defaults() {
        *out.safe_defaults.entry(seat).or_default() += 1;
    }
    for f in room.take_faults() {
        count_fault(out, &f);
    }
    // A host event whose handler failed ran out all the same.
    for key in room.take_refused_host_events() {
        *out.expiries.entry(key).or_default() += 1;
    }
    for e in room.take_events() {
        match &e.kind {
            EventKind::ActionRejected {
                action_type,
                rejection,
            } => {
                let code = rejection.code.as_str().to_owned();
                let key = (cut(action_type.as_deref().unwrap_or("?"), TYPE_MAX), code);
                let other = || (OTHER_TYPES.to_owned(), key.1.clone());
                count_in(&mut out.rejections, key.clone(), other);
            }
            EventKind::ScriptError { failure, .. } => {
                let at = match failure.line {
                    Some(l) => format!("{}:{l}", failure.script_id),
                    None => failure.script_id.clone(),
                };
                let message = || {
                    cut(
                        &format!("{}: {}", failure.function, failure.message),
                        TEXT_MAX,
                    )
                };
                let entry = out
                    .script_errors
                    .entry(at)
                    .or_insert_with(|| (0, message()));
                entry.0 += 1;
            }
            EventKind::MatchHostEvent { kind, seat, .. } => {
                let seat = seat.as_deref().unwrap_or("-").to_owned();
                *out.expiries.entry((kind.clone(), seat)).or_default() += 1;
            }
            _ => {}
        }
    }
}

/// Names, as a fault, each acting seat whose candidate actions were all
/// refused when its match stalled, with the reasons (a handler failing on
/// every legal move reads `script_error at main:12 ×5`).
fn why_stalled(room: &mut Room, out: &mut Outcome) {
    let acting: Vec<String> = room.match_layer().map(|m| m.acting()).unwrap_or_default();
    for seat in acting {
        let refused = room.refusals_of(&seat);
        if refused.is_empty() {
            continue;
        }
        let reasons: Vec<String> = refused
            .iter()
            .map(|(why, n)| format!("{why} ×{n}"))
            .collect();
        let line = format!(
            "stalled: every candidate action of seat {seat} was refused ({})",
            reasons.join(", ")
        );
        count_fault(out, &line);
    }
}

/// Characters of a fault or script error message a report keeps.
const TEXT_MAX: usize = 300;
/// Characters of a rejected action's type a report keeps.
const TYPE_MAX: usize = 64;
/// Distinct faults, or rejected (type, code) pairs, one match keeps apart;
/// the rest are counted together (a bot may name a new type each move).
const KEYS_MAX: usize = 8;
/// Distinct rejected action types the report lists; the rest are counted
/// together.
const TYPES_LISTED: usize = 100;
/// Where the faults past [`KEYS_MAX`] are counted.
const OTHER_FAULTS: &str = "(other faults)";
/// Where the rejected types past [`KEYS_MAX`] are counted.
const OTHER_TYPES: &str = "(other action types)";

/// The first `max` characters of `s`.
fn cut(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// Counts a fault (cut to [`TEXT_MAX`] characters) in the match's outcome.
fn count_fault(out: &mut Outcome, text: &str) {
    count_in(&mut out.faults, cut(text, TEXT_MAX), || {
        OTHER_FAULTS.to_owned()
    });
}

/// Counts `key` in `map`, or under `other()` once the map holds
/// [`KEYS_MAX`] keys and `key` is not one of them.
fn count_in<K: Ord>(map: &mut BTreeMap<K, u64>, key: K, other: impl FnOnce() -> K) {
    let key = if map.len() >= KEYS_MAX && !map.contains_key(&key) {
        other()
    } else {
        key
    };
    *map.entry(key).or_default() += 1;
}

fn read_result(room: &Room, out: &mut Outcome) {
    let result: Value = room
        .match_result()
        .and_then(|r| serde_json::from_str(&r).ok())
        .unwrap_or(Value::Null);
    out.status = result["status"]
        .as_str()
        .unwrap_or(if room.match_layer().is_some() {
            "stalled"
        } else {
            "no_match"
        })
        .to_owned();
    if let Some(scores) = result["scores"].as_object() {
        for (seat, v) in scores {
            if v.is_number() {
                out.scores.insert(seat.clone(), v.clone());
            }
        }
    }
    let scoring = room
        .match_layer()
        .map(|m| m.config.scoring())
        .unwrap_or_default();
    out.winners = scoring.winners(&out.scores);
}

/// Most matches one room plays in a row (reset between them).
const RUN_MAX: u64 = 256;

/// How many matches one room plays in a row: a number fixed by the run's
/// size alone (never by `--jobs`), so which matches share a room — and
/// so the report — is the same whatever the number of jobs; small enough
/// that a run splits into at least 16 runs for the cores to share.
fn run_length(matches: u64) -> u64 {
    (matches / 16).clamp(1, RUN_MAX)
}

/// Plays every match on `jobs` threads; outcomes in match order. Each
/// thread takes a run of consecutive matches at a time and plays them in
/// one room, reset between matches ([`Room::reset`]).
fn play_all(
    plan: &Plan<'_>,
    seed: u64,
    matches: u64,
    jobs: usize,
    watchdog: &digipology_server::watchdog::Watchdog,
) -> Result<Vec<Outcome>, String> {
    let run = run_length(matches);
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let results: Mutex<Vec<(u64, Result<Outcome, String>)>> = Mutex::new(Vec::new());
    let show = io::stderr().is_terminal();
    let jobs = usize::try_from(matches.div_ceil(run))
        .unwrap_or(usize::MAX)
        .min(jobs)
        .max(1);
    let spawned = std::thread::scope(|scope| {
        for _ in 0..jobs {
            let slot = watchdog.slot();
            let (next, done, results) = (&next, &done, &results);
            std::thread::Builder::new().spawn_scoped(scope, move || loop {
                SLOT.with(|s| {
                    if s.borrow().is_none() {
                        *s.borrow_mut() = Some(slot.clone());
                    }
                });
                let first = next.fetch_add(1, Ordering::Relaxed).saturating_mul(run);
                if first >= matches {
                    return;
                }
                let played = play_run(plan, seed, first..matches.min(first + run));
                let k = u64::try_from(played.len()).unwrap_or(0);
                let n = done.fetch_add(k, Ordering::Relaxed) + k;
                if let Ok(mut r) = results.lock() {
                    r.extend(played);
                }
                if show {
                    eprint!("\rsimulate: {n}/{matches} matches");
                    if n == matches {
                        eprintln!();
                    }
                }
            })?;
        }
        Ok::<(), io::Error>(())
    });
    spawned.map_err(|e| format!("cannot start a simulation thread: {e}"))?;
    let mut all = results
        .into_inner()
        .map_err(|_| "a simulation thread failed".to_owned())?;
    all.sort_by_key(|(i, _)| *i);
    all.into_iter()
        .map(|(i, r)| r.map_err(|e| format!("match {i} (seed {}): {e}", seed.wrapping_add(i))))
        .collect()
}

/// The fault a match gets when it ends differently played alone (the
/// leak check in [`play_run`]).
const STALE: &str = "this match ended differently when played alone in a new room than after the matches before it in the same room: the game keeps state between matches outside storage (a table or a captured local its scripts change; docs/lua-api.md asks scripts to treat those as constants)";

/// Plays matches `range` in one room, reset between them. The last match
/// of the run is played again in a new room: when its end differs, the
/// game keeps state between matches outside `storage`, and the match
/// says so (a fault).
fn play_run(
    plan: &Plan<'_>,
    seed: u64,
    range: std::ops::Range<u64>,
) -> Vec<(u64, Result<Outcome, String>)> {
    let mut room: Option<Room> = None;
    let mut out = Vec::new();
    let last = range.end.saturating_sub(1);
    let first = range.start;
    for i in range {
        let s = seed.wrapping_add(i);
        // A panic is a bug of ours: the match is reported as crashed,
        // the others go on (in a new room).
        let played = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut r = match room.take() {
                Some(mut r) => {
                    r.reset(plan.table(s))?;
                    r
                }
                None => plan.room(s)?,
            };
            let mut outcome = plan.play(s, &mut r)?;
            if r.interrupted() {
                // Its game was stopped: the next match gets a new room.
                return Ok(outcome);
            }
            if i == last && i != first {
                let ended = r.kernel().state_hash();
                let mut alone = plan.room(s)?;
                plan.play(s, &mut alone)?;
                if alone.kernel().state_hash() != ended {
                    *outcome.faults.entry(STALE.to_owned()).or_default() += 1;
                }
            }
            room = Some(r);
            Ok(outcome)
        }))
        .unwrap_or_else(|_| {
            Ok(Outcome {
                seed: s,
                status: "crashed".into(),
                ..Outcome::default()
            })
        });
        out.push((i, played));
    }
    out
}

/// Win/draw/loss of every seat in one finished match: the best score (the
/// highest, or the lowest under `match.scoring`) wins alone, or draws
/// when shared.
fn standings(o: &Outcome, seats: &[String]) -> BTreeMap<String, Standing> {
    let mut out = BTreeMap::new();
    if o.status != "match_over" {
        return out;
    }
    for seat in seats {
        out.insert(seat.clone(), Standing::of(seat, &o.winners));
    }
    out
}

/// The 95 % Wilson score interval of `k` successes in `n` trials.
fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    // Counts far below 2^52: exact as doubles.
    #[allow(clippy::cast_precision_loss)]
    let (k, n) = (k as f64, n as f64);
    let z = 1.959_963_984_540_054_f64;
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Rounds for the report (the same digits on every machine); a number
/// too large to round is already whole (and `-0` reads `0`).
fn r4(x: f64) -> f64 {
    let y = x * 10_000.0;
    if y.is_finite() {
        y.round() / 10_000.0 + 0.0
    } else {
        x
    }
}

/// Scores above this are scaled down (by [`SCALE`], a power of two, so
/// exactly) before they are summed and squared, so that neither overflows.
/// 2^500 (its biased exponent, 500 + 1023, in the exponent bits).
const HUGE: f64 = f64::from_bits(1523 << 52);
/// 2^-600.
const SCALE: f64 = f64::from_bits(423 << 52);

/// A seat's scores over the matches that reached `match_over`: how many,
/// their mean, their population standard deviation (divided by the
/// count, not the count less one) and their range — `null` without any.
fn score_stats(scores: &[&Value]) -> Value {
    let xs: Vec<f64> = scores.iter().filter_map(|v| v.as_f64()).collect();
    let (Some(min), Some(max)) = (
        scores.iter().copied().min_by(|a, b| by_number(a, b)),
        scores.iter().copied().max_by(|a, b| by_number(a, b)),
    ) else {
        return Value::Null;
    };
    // At most a million matches: exact as a double.
    #[allow(clippy::cast_precision_loss)]
    let n = xs.len() as f64;
    let big = xs.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let scale = if big > HUGE { SCALE } else { 1.0 };
    let mean = xs.iter().map(|x| x * scale).sum::<f64>() / n;
    let var = xs.iter().map(|x| (x * scale - mean).powi(2)).sum::<f64>() / n;
    json!({"matches": xs.len(), "mean": r4(mean / scale), "sd": r4(var.sqrt() / scale),
           "min": min, "max": max})
}

/// Two score values in numeric order.
fn by_number(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_cmp(x, y),
        _ => std::cmp::Ordering::Equal,
    }
}

/// Min, quartiles, max and a histogram of `values`: at most ten bins of
/// one width, from the least value, the last holding the greatest (one
/// bin when every value is the same).
fn spread(values: &[i64]) -> Value {
    let mut v = values.to_vec();
    v.sort_unstable();
    let Some((&lo, &hi)) = v.first().zip(v.last()) else {
        return json!(null);
    };
    let at = |q: usize| v[(v.len() - 1) * q / 100];
    // The fewest bins of one width up to ten covering lo..=hi: no bin
    // past the greatest value.
    let range = hi.saturating_sub(lo);
    let width = range / 10 + 1;
    let count = usize::try_from(range / width + 1).unwrap_or(10).min(10);
    let mut bins = vec![0u64; count];
    for x in &v {
        let b = usize::try_from(x.saturating_sub(lo) / width)
            .unwrap_or(0)
            .min(count - 1);
        bins[b] += 1;
    }
    json!({"min": lo, "p25": at(25), "median": at(50), "p75": at(75), "p90": at(90), "max": hi,
           "histogram": {"from": lo, "binWidth": width, "counts": bins}})
}

/// Per-seat win/draw/loss with the win rate's 95 % interval.
fn seat_rates(outcomes: &[Outcome], seats: &[String]) -> Value {
    let over = outcomes.iter().filter(|o| o.status == "match_over").count();
    let over = u64::try_from(over).unwrap_or(u64::MAX);
    let mut counts: BTreeMap<&str, [u64; 3]> = seats.iter().map(|s| (s.as_str(), [0; 3])).collect();
    let mut scores: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for o in outcomes {
        for (seat, mark) in standings(o, seats) {
            if let Some(c) = counts.get_mut(seat.as_str()) {
                c[match mark {
                    Standing::Win => 0,
                    Standing::Draw => 1,
                    Standing::Loss => 2,
                }] += 1;
            }
        }
        if o.status == "match_over" {
            for (seat, v) in &o.scores {
                scores.entry(seat).or_default().push(v);
            }
        }
    }
    let rate = |k: u64| {
        // Counts far below 2^52: exact as doubles.
        #[allow(clippy::cast_precision_loss)]
        // No rate without a finished match.
        let r = (over > 0).then(|| r4(k as f64 / over as f64));
        json!(r)
    };
    let rows: serde_json::Map<String, Value> = counts
        .into_iter()
        .map(|(seat, [w, d, l])| {
            let (lo, hi) = wilson(w, over);
            (
                seat.to_owned(),
                json!({"wins": w, "draws": d, "losses": l, "winRate": rate(w),
                "winRate95": [r4(lo), r4(hi)], "drawRate": rate(d),
                "score": score_stats(scores.get(seat).map_or(&[][..], Vec::as_slice))}),
            )
        })
        .collect();
    Value::Object(rows)
}

/// The report (docs/simulate.md, The report).
fn report(
    opts: &Options,
    plan: &Plan<'_>,
    outcomes: &[Outcome],
    records: &BTreeMap<u64, String>,
) -> Value {
    let mut statuses: BTreeMap<&str, u64> = BTreeMap::new();
    let mut rejections: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    let mut errors: BTreeMap<&str, (u64, u64, &str, u64)> = BTreeMap::new();
    let mut expiries: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    let mut faults: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    for o in outcomes {
        *statuses.entry(o.status.as_str()).or_default() += 1;
        for ((t, code), n) in &o.rejections {
            let full = rejections.len() >= TYPES_LISTED && !rejections.contains_key(t.as_str());
            let t = if full { OTHER_TYPES } else { t.as_str() };
            *rejections.entry(t).or_default().entry(code).or_default() += n;
        }
        for (at, (n, message)) in &o.script_errors {
            let e = errors.entry(at).or_insert((0, 0, message, o.seed));
            e.0 += n;
            e.1 += 1;
        }
        for ((kind, seat), n) in &o.expiries {
            *expiries.entry(kind).or_default().entry(seat).or_default() += n;
        }
        for (message, n) in &o.faults {
            let f = faults.entry(message).or_insert((0, 0, o.seed));
            f.0 += n;
            f.1 += 1;
        }
    }
    let game_faults: Vec<Value> = faults
        .iter()
        .take(FAULTS_LISTED)
        .map(|(m, (n, k, seed))| json!({"message": m, "count": n, "matches": k, "firstSeed": seed}))
        .collect();
    let script_errors: Vec<Value> = errors
        .iter()
        .map(|(at, (n, m, msg, seed))| json!({"at": at, "count": n, "matches": m, "message": msg, "firstSeed": seed}))
        .collect();
    let mut longest: Vec<&Outcome> = outcomes.iter().collect();
    longest.sort_by_key(|o| {
        (
            std::cmp::Reverse(o.actions),
            std::cmp::Reverse(o.virtual_ms),
            o.seed,
        )
    });
    let longest: Vec<Value> = longest
        .iter()
        .take(5)
        .map(|o| json!({"seed": o.seed, "actions": o.actions, "virtualMs": o.virtual_ms, "status": o.status}))
        .collect();
    let failed: Vec<Value> = outcomes
        .iter()
        .filter(|o| o.failed())
        .take(FAILED_LISTED)
        .map(|o| json!({"seed": o.seed, "status": o.status, "scriptErrors": o.script_errors.keys().collect::<Vec<_>>(), "record": records.get(&o.seed)}))
        .collect();
    json!({
        "simulate": 1,
        "game": plan.package.json.get("id"),
        "matches": outcomes.len(),
        "seed": opts.seed,
        "bots": plan.bots.iter().map(|(s, b)| (s.clone(), json!(b.name()))).collect::<serde_json::Map<_, _>>(),
        "maxActions": opts.max_actions,
        "thinkMs": opts.think_ms,
        "statuses": statuses,
        "scoring": plan.scoring.name(),
        "seats": seat_rates(outcomes, &plan.seats),
        "length": lengths(outcomes),
        "rejections": rejections,
        "scriptErrors": script_errors,
        "gameFaults": game_faults,
        "expiries": expiries,
        "safeDefaults": safe_defaults(outcomes),
        "longest": longest,
        "failed": failed,
        "failedCount": outcomes.iter().filter(|o| o.failed()).count(),
        "failedSeeds": outcomes.iter().filter(|o| o.failed()).map(|o| o.seed).take(FAILED_SEEDS).collect::<Vec<_>>(),
    })
}

/// How long the matches were: in bot moves and clock jumps, and in
/// virtual time.
fn lengths(outcomes: &[Outcome]) -> Value {
    let actions: Vec<i64> = outcomes
        .iter()
        .map(|o| i64::try_from(o.actions).unwrap_or(i64::MAX))
        .collect();
    let times: Vec<i64> = outcomes.iter().map(|o| o.virtual_ms).collect();
    json!({"actions": spread(&actions), "virtualMs": spread(&times)})
}

/// Per seat, the safe defaults the room played for it: how many, and in
/// how many matches.
fn safe_defaults(outcomes: &[Outcome]) -> Value {
    let mut seats: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for o in outcomes {
        for (seat, n) in &o.safe_defaults {
            let s = seats.entry(seat).or_default();
            s.0 += n;
            s.1 += 1;
        }
    }
    seats
        .into_iter()
        .map(|(seat, (n, k))| (seat.to_owned(), json!({"times": n, "matches": k})))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Distinct match-function failures listed in the report.
const FAULTS_LISTED: usize = 100;

/// Failed matches listed (and recorded) in the report.
const FAILED_LISTED: usize = 20;

/// Failed matches named by seed in the report.
const FAILED_SEEDS: usize = 10_000;

/// Plays each failed match again with a record (`digipology replay`
/// checks it): `out/records/seed-N.jsonl`, by seed.
fn record_failed(
    opts: &Options,
    plan: &Plan<'_>,
    outcomes: &[Outcome],
    out: &Path,
) -> Result<BTreeMap<u64, String>, String> {
    let mut records = BTreeMap::new();
    let dir = out.join("records");
    // The game as an absolute path: the records replay from anywhere.
    let game = std::fs::canonicalize(&opts.game).unwrap_or_else(|_| opts.game.clone());
    for o in outcomes.iter().filter(|o| o.failed()).take(FAILED_LISTED) {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = format!("records/seed-{}.jsonl", o.seed);
        let path = out.join(&name);
        let file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut room = plan.room(o.seed)?;
        let mut header = json!({"game": game.display().to_string(), "seed": o.seed,
            "instructionsMax": null, "memoryMax": null});
        if let (Some(_), Some(m)) = (&plan.config, room.match_layer()) {
            header["match"] = m.config.to_json();
        }
        room.record_to(Box::new(io::BufWriter::new(file)), header)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        plan.play(o.seed, &mut room)?;
        records.insert(o.seed, name);
    }
    Ok(records)
}

/// Removes the records an earlier run left in `dir/records` (the
/// `seed-N.jsonl` files simulate writes, nothing else), so the folder
/// names only this run's failed matches.
fn forget_records(dir: &Path) -> Result<(), String> {
    let records = dir.join("records");
    let Ok(entries) = std::fs::read_dir(&records) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("seed-") && name.ends_with(".jsonl") {
            std::fs::remove_file(entry.path())
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// An expectation (`--assert`).
enum Expect {
    NoScriptErrors,
    AllFinish,
    WinRate(String, f64, f64),
}

/// An expectation's parts: `win-rate:SEAT:LO:HI` split so that SEAT may
/// hold colons (the band is read from the right); others as they are.
fn win_rate_parts(a: &str) -> Vec<&str> {
    match a.strip_prefix("win-rate:") {
        Some(rest) => {
            let mut back: Vec<&str> = rest.rsplitn(3, ':').collect();
            back.push("win-rate");
            back.reverse();
            back
        }
        None => vec![a],
    }
}

/// Reads the expectations before anything is played.
fn parse_asserts(asserts: &[String], seats: &[String]) -> Result<Vec<Expect>, String> {
    asserts
        .iter()
        .map(|a| match win_rate_parts(a).as_slice() {
            ["no-script-errors"] => Ok(Expect::NoScriptErrors),
            ["all-finish"] => Ok(Expect::AllFinish),
            ["win-rate", seat, lo, hi] => {
                if !seats.iter().any(|s| s == seat) {
                    return Err(format!(
                        "--assert {a}: the game has no seat {seat:?} (seats: {})",
                        seats.join(", ")
                    ));
                }
                let (lo, hi) = (parse_rate(lo, a)?, parse_rate(hi, a)?);
                if lo > hi {
                    return Err(format!(
                        "--assert {a}: the band is empty ({lo} is above {hi})"
                    ));
                }
                Ok(Expect::WinRate((*seat).to_owned(), lo, hi))
            }
            _ => Err(format!(
                "--assert {a:?}: use no-script-errors, all-finish or win-rate:SEAT:LO:HI"
            )),
        })
        .collect()
}

/// How many entries the report lists under `key`.
fn listed(report: &Value, key: &str) -> usize {
    report[key].as_array().map_or(0, Vec::len)
}

/// The expectations that do not hold (empty: all hold).
fn check_asserts(expects: &[Expect], report: &Value) -> Vec<String> {
    let mut failed = Vec::new();
    for e in expects {
        match e {
            Expect::NoScriptErrors => {
                let (errors, faults) =
                    (listed(report, "scriptErrors"), listed(report, "gameFaults"));
                if errors + faults > 0 {
                    failed.push(format!(
                        "no-script-errors: {errors} script error sites, {faults} game faults ({})",
                        if errors > 0 {
                            &report["scriptErrors"][0]["at"]
                        } else {
                            &report["gameFaults"][0]["message"]
                        }
                    ));
                }
            }
            Expect::AllFinish => {
                let bad = ["unfinished", "stalled", "crashed"]
                    .iter()
                    .map(|s| report["statuses"][s].as_u64().unwrap_or(0))
                    .sum::<u64>();
                if bad > 0 {
                    failed.push(format!("all-finish: {bad} matches did not finish"));
                }
            }
            Expect::WinRate(seat, lo, hi) => {
                match report["seats"][seat.as_str()]["winRate"].as_f64() {
                    Some(rate) if rate >= *lo && rate <= *hi => {}
                    Some(rate) => failed.push(format!(
                        "win-rate: seat {seat} won {rate}, not within {lo}..{hi}"
                    )),
                    None => failed.push(format!(
                        "win-rate: seat {seat} has no win rate (no match reached match_over)"
                    )),
                }
            }
        }
    }
    failed
}

fn parse_rate(text: &str, whole: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|r| (0.0..=1.0).contains(r))
        .ok_or_else(|| format!("--assert {whole}: {text:?} is not a rate between 0 and 1"))
}

/// The bots per seat from `--bots` (`KIND`, or `SEAT=KIND,…`).
fn bots_of(spec: &str, seats: &[String]) -> Result<BTreeMap<String, Bot>, String> {
    let mut out: BTreeMap<String, Bot> = seats.iter().map(|s| (s.clone(), Bot::Random)).collect();
    if !spec.contains('=') {
        let bot = Bot::parse(spec)?;
        out.values_mut().for_each(|b| *b = bot);
        return Ok(out);
    }
    let mut named = std::collections::BTreeSet::new();
    for part in spec.split(',') {
        let (seat, kind) = part
            .split_once('=')
            .ok_or_else(|| format!("--bots {spec:?}: write SEAT=KIND,…"))?;
        if !out.contains_key(seat) {
            return Err(format!(
                "--bots: the game has no seat {seat:?} (seats: {})",
                seats.join(", ")
            ));
        }
        if !named.insert(seat) {
            return Err(format!("--bots {spec:?}: seat {seat:?} is named twice"));
        }
        out.insert(seat.to_owned(), Bot::parse(kind)?);
    }
    Ok(out)
}

/// Which end of the scores wins: `--match FILE`'s scoring, else the
/// game's (the highest when neither declares one).
fn scoring_of(package: &Package, config: Option<&MatchConfig>) -> Result<Scoring, CliError> {
    Ok(match config {
        Some(c) => c.scoring(),
        None => package
            .match_config()?
            .map(|c| c.scoring())
            .unwrap_or_default(),
    })
}

/// `digipology simulate`: plays, reports, checks the expectations. The
/// report goes to `--out` (report.json) or standard output.
///
/// # Errors
/// The game cannot be loaded, has no match contract, a flag is wrong, a
/// match could not be played, the report cannot be written; `Ok(false)`
/// when an expectation failed.
pub fn simulate(opts: &Options) -> Result<bool, CliError> {
    let fail = |message: String| CliError::Io {
        path: PathBuf::from("simulate"),
        message,
    };
    let package = Package::load(&opts.game)?;
    let config = match &opts.match_config {
        Some(f) => Some((package::match_config_file(f)?, f.clone())),
        None => None,
    };
    let seats = package.seats();
    let scoring = scoring_of(&package, config.as_ref().map(|(c, _)| c))?;
    let plan = Plan {
        table: package.initial_state(0)?,
        package: &package,
        config,
        scoring,
        bots: bots_of(&opts.bots, &seats).map_err(fail)?,
        seats,
        max_actions: opts.max_actions,
        think_ms: opts.think_ms,
        stall_ms: opts.stall_ms,
    };
    // The last line of defence behind metering: a move that runs past
    // --stall-ms has its game stopped, and the match is reported `hung`.
    let watchdog = digipology_server::watchdog::Watchdog::start(std::time::Duration::from_millis(
        opts.stall_ms.max(1),
    ))
    .map_err(fail)?;
    SLOT.with(|s| *s.borrow_mut() = Some(watchdog.slot()));
    if plan.room(opts.seed).map_err(fail)?.match_layer().is_none() {
        return Err(fail(format!("{} has no match contract: give game.json a \"match\" or run with --match FILE (docs/match.md)", opts.game.display())));
    }
    let jobs = if opts.jobs == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        opts.jobs
    };
    // Everything a run could stumble on after playing is checked first.
    let expects = parse_asserts(&opts.asserts, &plan.seats).map_err(fail)?;
    if let Some(dir) = &opts.out {
        if dir.exists() && !dir.is_dir() {
            return Err(fail(format!("--out {}: not a folder", dir.display())));
        }
        // What the run writes last must have room before it plays.
        for (name, folder) in [
            ("report.json", false),
            ("report.html", false),
            ("records", true),
        ] {
            let p = dir.join(name);
            if p.exists() && p.is_dir() != folder {
                let what = if folder { "a file" } else { "a folder" };
                return Err(fail(format!("--out {}: {what} is in the way", p.display())));
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("--out {}: {e}", dir.display())))?;
        forget_records(dir).map_err(fail)?;
    }
    let outcomes = play_all(&plan, opts.seed, opts.matches, jobs, &watchdog).map_err(fail)?;
    let records = match &opts.out {
        Some(dir) => record_failed(opts, &plan, &outcomes, dir).map_err(fail)?,
        None => BTreeMap::new(),
    };
    let report = report(opts, &plan, &outcomes, &records);
    let failed = check_asserts(&expects, &report);
    let text = serde_json::to_string_pretty(&report).unwrap_or_default();
    match &opts.out {
        Some(dir) => {
            let path = dir.join("report.json");
            std::fs::write(&path, format!("{text}\n"))
                .map_err(|e| fail(format!("{}: {e}", path.display())))?;
            let page = dir.join("report.html");
            std::fs::write(&page, crate::simulate_page::page(&report))
                .map_err(|e| fail(format!("{}: {e}", page.display())))?;
            println!("{}", summary(&report, dir));
        }
        None => println!("{text}"),
    }
    for f in &failed {
        eprintln!("digipology: simulate: expectation failed: {f}");
    }
    Ok(failed.is_empty())
}

/// A few lines for a terminal when the report went to a folder.
fn summary(report: &Value, dir: &Path) -> String {
    let lowest = report["scoring"] == Scoring::LowestWins.name();
    let mut lines = vec![format!(
        "simulate: {} matches of {} — {}{}",
        report["matches"],
        report["game"].as_str().unwrap_or("?"),
        report["statuses"],
        if lowest { " (lowest score wins)" } else { "" }
    )];
    if let Some(seats) = report["seats"].as_object() {
        for (seat, r) in seats {
            let s = &r["score"];
            let score = if s.is_null() {
                String::new()
            } else {
                format!(
                    "; score mean {} (sd {}, min {}, max {})",
                    s["mean"], s["sd"], s["min"], s["max"]
                )
            };
            lines.push(format!(
                "  {seat}: wins {} ({}, 95% {}–{}), draws {}{score}",
                r["wins"], r["winRate"], r["winRate95"][0], r["winRate95"][1], r["draws"]
            ));
        }
    }
    lines.push(format!(
        "  script error sites: {}, game faults: {}, failed matches: {}",
        listed(report, "scriptErrors"),
        listed(report, "gameFaults"),
        report["failedCount"]
    ));
    lines.push(format!(
        "  report: {} ({})",
        dir.join("report.html").display(),
        dir.join("report.json").display()
    ));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(scores: &[Value]) -> Value {
        score_stats(&scores.iter().collect::<Vec<_>>())
    }

    /// docs/simulate.md, The report: a seat's score mean, population
    /// standard deviation and range, against values worked by hand.
    #[test]
    fn score_stats_match_the_hand_computed_values() {
        // Mean 40 / 8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32,
        // 32 / 8 = 4: sd 2 (the sample sd, 32 / 7, would be 2.1381).
        let s = stats(&[2, 4, 4, 4, 5, 5, 7, 9].map(|n| json!(n)));
        assert_eq!(
            s,
            json!({"matches": 8, "mean": 5.0, "sd": 2.0, "min": 2, "max": 9})
        );
        // Mean 1 / 3 = 0.3333; deviations -5/6, 2/3, 1/6 (squares 25/36,
        // 16/36, 1/36), 42/36 / 3 = 7/18: sd 0.6236. Integers and floats
        // mix; the range keeps each as the game wrote it.
        let s = stats(&[json!(-0.5), json!(1), json!(0.5)]);
        assert_eq!(
            s,
            json!({"matches": 3, "mean": 0.3333, "sd": 0.6236, "min": -0.5, "max": 1})
        );
        // One match: no spread.
        assert_eq!(
            stats(&[json!(7)]),
            json!({"matches": 1, "mean": 7.0, "sd": 0.0, "min": 7, "max": 7})
        );
        // Scores near the largest double neither overflow nor vanish.
        let s = stats(&[json!(1e300), json!(-1e300)]);
        assert_eq!(s["mean"], json!(0.0), "{s}");
        assert_eq!(s["sd"], json!(1e300), "{s}");
        // No scores at all: no figures.
        assert_eq!(stats(&[]), Value::Null);
        // A mean that rounds to zero from below reads 0, not -0.
        assert_eq!(stats(&[json!(-0.00001)])["mean"].to_string(), "0.0");
    }

    /// docs/simulate.md, The report: the length histogram never has a bin
    /// past the longest match — one bin when every match is as long.
    #[test]
    fn histograms_stay_readable_for_one_length_or_a_few() {
        let h = |v: &[i64]| spread(v)["histogram"].clone();
        assert_eq!(
            h(&[12, 12, 12]),
            json!({"from": 12, "binWidth": 1, "counts": [3]})
        );
        assert_eq!(
            h(&[5, 7, 7]),
            json!({"from": 5, "binWidth": 1, "counts": [1, 0, 2]})
        );
        // Ten values of width one; eleven need width two, and six bins.
        assert_eq!(h(&[0, 9])["counts"], json!([1, 0, 0, 0, 0, 0, 0, 0, 0, 1]));
        assert_eq!(
            h(&[0, 10]),
            json!({"from": 0, "binWidth": 2, "counts": [1, 0, 0, 0, 0, 1]})
        );
        assert_eq!(
            h(&[0, 1000]),
            json!({"from": 0, "binWidth": 101, "counts": [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]})
        );
        let s = spread(&[12, 12]);
        assert_eq!((s["min"].clone(), s["max"].clone()), (json!(12), json!(12)));
    }
}
