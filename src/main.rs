//! `digipology`: run, test and inspect deterministic tabletop games.
// The function-length budget (clippy.toml; the policy is in Cargo.toml).
#![warn(clippy::too_many_lines)]

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The program's allocator: mimalloc. Scripted actions make many small,
/// short-lived allocations (event tables, proxies, strings, undo records)
/// and glibc's allocator spent about a seventh of a simulation in them
/// (docs/performance.md). Nothing the program writes depends on it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use digipology_kernel::Viewer;

mod api_check;
mod check;
mod replay;
mod scenario;
mod simulate;
mod simulate_page;
mod watch;

use digipology_room::{error, jsonl, package, record, room};

use error::CliError;
use package::Package;
use room::Room;

#[derive(Parser)]
#[command(
    name = "digipology",
    version,
    about = "Deterministic scripted tabletop games, headless"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a room for GAME and process ordered actions; events go out as JSONL.
    Run(Box<RunArgs>),
    /// Run the scenario tests under each game's tests/ folder.
    Test(TestArgs),
    /// Re-run a recorded room (`run --record`) and verify every state hash.
    Replay(ReplayArgs),
    /// Validate a game package and its scripts, and load it as `run` would;
    /// processes no action.
    Check(CheckArgs),
    /// Run a room and reload the game's scripts and game.json when they change.
    Watch(WatchArgs),
    /// Print the game's public manifest: id, seats, match defaults, phases,
    /// and the JSON Schema of every action a seat may submit.
    Manifest(ManifestArgs),
    /// Serve games to players and programs over HTTP on this machine
    /// (docs/server.md): matches, seat tokens, observations, event
    /// streams, a durable log that survives restarts.
    Serve(Box<ServeArgs>),
    /// Play many matches of a game with bots, on every core, and report
    /// win rates, lengths, rejections, script errors and expiries
    /// (docs/simulate.md).
    Simulate(Box<SimulateArgs>),
}

/// The host's ceilings for the limits a game sets in game.json
/// (docs/lua-api.md, Limits and ceilings).
#[derive(clap::Args, Clone, Copy)]
struct CeilingArgs {
    /// The most Lua instructions per action a game may set
    /// (`limits.instructionsMax`).
    #[arg(long, default_value_t = digipology_room::ceilings::INSTRUCTIONS_CEILING, value_name = "N")]
    instructions_ceiling: u64,
    /// The most bytes of Lua memory a game may set (`limits.memoryBytesMax`).
    #[arg(long, default_value_t = digipology_room::ceilings::MEMORY_CEILING, value_name = "BYTES")]
    memory_ceiling: u64,
    /// The largest byte budget a game may set (`limits.bytesMax`).
    #[arg(long, default_value_t = digipology_room::ceilings::BYTES_CEILING, value_name = "BYTES")]
    bytes_ceiling: u64,
}

impl CeilingArgs {
    /// Holds every game this process loads to these ceilings.
    fn apply(self) -> Result<(), String> {
        digipology_room::ceilings::set(digipology_room::ceilings::Ceilings {
            instructions_max: self.instructions_ceiling,
            memory_bytes_max: self.memory_ceiling,
            bytes_max: self.bytes_ceiling,
        })
    }
}

#[derive(clap::Args)]
struct SimulateArgs {
    /// The game folder.
    game: PathBuf,
    /// How many matches.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    matches: u64,
    /// Bots: `random`, `safe`, `fuzz`, `idle` or `game` for every seat,
    /// or `SEAT=KIND,…`.
    #[arg(long, default_value = "random")]
    bots: String,
    /// Match i plays on seed SEED + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads playing matches; 0 (the default) is one per core.
    #[arg(long, default_value_t = 0)]
    jobs: usize,
    /// Play under this match config instead of game.json's.
    #[arg(long = "match", value_name = "FILE")]
    match_config: Option<PathBuf>,
    /// Write report.json and the failed matches' records here (default:
    /// the report on standard output).
    #[arg(long)]
    out: Option<PathBuf>,
    /// An expectation (repeatable): `no-script-errors`, `all-finish`,
    /// `win-rate:SEAT:LO:HI`. Exit code 1 when one fails.
    #[arg(long = "assert", value_name = "EXPECTATION")]
    asserts: Vec<String>,
    /// Bot moves and clock jumps after which a match counts as never
    /// ending (`unfinished`).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    max_actions: u64,
    /// Virtual milliseconds a bot takes to act.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(i64).range(0..=86_400_000))]
    think_ms: i64,
    /// The longest one bot move may run, in real milliseconds, before the
    /// game is stopped and the match reported `hung` (a failure).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    stall_ms: u64,
    #[command(flatten)]
    ceilings: CeilingArgs,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Games to offer: game folders, or folders of games (default:
    /// ./examples, every game in it).
    games: Vec<PathBuf>,
    /// Address to listen on (loopback by default; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:7878")]
    addr: String,
    /// Folder for the durable room log.
    #[arg(long, default_value = "digipology-data")]
    data: PathBuf,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    max_body_bytes: usize,
    /// Requests a second one token may make (sustained).
    #[arg(long, default_value_t = 50)]
    rate: u32,
    /// Requests one token may make at once above that rate.
    #[arg(long, default_value_t = 100)]
    burst: u32,
    /// Most matches open or running at once.
    #[arg(long, default_value_t = 1000)]
    max_rooms: usize,
    /// Most connections at once.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Most event streams one seat token may hold open.
    #[arg(long, default_value_t = 4)]
    max_streams_per_token: usize,
    /// How long a seat whose event stream dropped may take to reconnect
    /// before `system.player_disconnected` (ms).
    #[arg(long, default_value_t = 30_000)]
    grace_ms: u64,
    /// A running match with no input for this long is aborted (ms; 0:
    /// never).
    #[arg(long, default_value_t = 86_400_000)]
    abandon_after_ms: u64,
    /// Threads that run rooms.
    #[arg(long, default_value_t = 2)]
    room_threads: usize,
    /// Most inputs one match may log.
    #[arg(long, default_value_t = 100_000)]
    max_inputs_per_match: u64,
    /// Longest wait of an observation long poll (ms).
    #[arg(long, default_value_t = 30_000)]
    long_poll_max_ms: u64,
    /// How long a connection may take to send a request's head (ms); an
    /// idle connection is closed after it.
    #[arg(long, default_value_t = 10_000)]
    header_timeout_ms: u64,
    /// Reload a game's running rooms when its scripts or game.json change
    /// (as `digipology watch` does); a broken edit keeps the old code.
    #[arg(long)]
    watch: bool,
    /// The longest one input of a room may run (ms) before the server
    /// stops its game and aborts the match (docs/server.md, A game that
    /// stalls).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    room_stall_ms: u64,
    #[command(flatten)]
    ceilings: CeilingArgs,
}

#[derive(clap::Args)]
struct RunArgs {
    /// The game folder (holding game.json) or the game.json file.
    game: PathBuf,
    /// Room seed for the canonical RNG.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Players to join and seat in seat order, comma-separated (p1,p2).
    /// Default without --actions: one player per seat, named p1, p2, ...
    #[arg(long, value_delimiter = ',')]
    players: Option<Vec<String>>,
    /// Ordered actions, one JSON object per line ('-' for standard input).
    #[arg(long)]
    actions: Option<PathBuf>,
    /// Where events go, as JSONL ('-' for standard output, the default).
    #[arg(long, default_value = "-")]
    events: String,
    /// How events look: `jsonl`, or `text` (readable lines). Default: text
    /// when they go to a terminal, JSONL otherwise (piped, or `--events FILE`).
    #[arg(long)]
    format: Option<String>,
    /// Write the final canonical state (RFC 8785 JSON) to this file.
    #[arg(long)]
    state_out: Option<PathBuf>,
    /// Whose view the events and `--state-out` show: `referee` (everything,
    /// the default), `spectator` (public information only), or a seat id
    /// (what the player in that seat may see). See docs/observations.md.
    #[arg(long, default_value = "referee")]
    view: String,
    /// Run the match under this config instead of game.json's `match` (a
    /// JSON object of the same shape; docs/match.md).
    #[arg(long = "match")]
    match_config: Option<PathBuf>,
    /// Write the `--view` viewer's observation (docs/match.md) after every
    /// processed action, one JSON object a line ('-' for standard error).
    #[arg(long)]
    observations: Option<String>,
    /// Also write a replayable record: each processed action (with its `at`)
    /// and the state hash after it, one JSON object a line.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Most timers fired after the input ends (a game that re-arms timers
    /// forever stops here).
    #[arg(long, default_value_t = room::END_FIRES_MAX)]
    max_end_fires: u64,
    /// Lua instructions one action may run (overrides game.json limits).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    instructions_max: Option<u64>,
    /// Bytes the room's Lua VM may use (overrides game.json limits).
    #[arg(long, value_parser = positive_usize)]
    memory_max: Option<usize>,
    /// Write a save game here when the input ends (the canonical state, the
    /// room clock and pending timers); pending timers do not fire at the
    /// end, they stay pending in the save.
    #[arg(long)]
    save: Option<PathBuf>,
    /// Continue a saved room (`--save`) instead of starting the game: no
    /// game start, no default players; the actions continue its stream.
    #[arg(long, conflicts_with = "seed")]
    resume: Option<PathBuf>,
    #[command(flatten)]
    ceilings: CeilingArgs,
}

#[derive(clap::Args)]
struct WatchArgs {
    /// The game folder (holding game.json).
    game: PathBuf,
    /// Room seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Actions to process first; then standard input, one JSON action a line.
    #[arg(long)]
    actions: Option<PathBuf>,
    /// Players to join and seat (default without --actions: one per seat).
    #[arg(long, value_delimiter = ',')]
    players: Option<Vec<String>>,
    /// On every script change, replay the whole stream with the new code and
    /// report where the outcome first diverges.
    #[arg(long)]
    replay_on_change: bool,
    #[command(flatten)]
    ceilings: CeilingArgs,
}

#[derive(clap::Args)]
struct CheckArgs {
    /// The game folder (holding game.json) or the game.json file.
    game: PathBuf,
    /// Also check this match config (a room's own, as `run --match` takes
    /// it) and the game against it, instead of game.json's `match`.
    #[arg(long = "match")]
    match_config: Option<PathBuf>,
    #[command(flatten)]
    ceilings: CeilingArgs,
}

#[derive(clap::Args)]
struct ManifestArgs {
    /// The game folder (holding game.json) or the game.json file.
    game: PathBuf,
}

#[derive(clap::Args)]
struct ReplayArgs {
    /// The record written by `digipology run --record`.
    log: PathBuf,
    /// The game to replay against (default: the one named in the record).
    #[arg(long)]
    game: Option<PathBuf>,
}

#[derive(clap::Args)]
struct TestArgs {
    /// Game folders, folders of games, or scenario files (default: the
    /// current folder).
    paths: Vec<PathBuf>,
    /// `text` (default) or `junit` (XML on standard output).
    #[arg(long, default_value = "text")]
    format: String,
}

/// Whether a panic is `print!` finding standard output closed (a broken
/// pipe), which is no bug.
fn reader_went_away(info: &std::panic::PanicHookInfo<'_>) -> bool {
    let p = info.payload();
    let text = p
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| p.downcast_ref::<&str>().copied())
        .unwrap_or("");
    text.starts_with("failed printing to stdout") && text.contains("Broken pipe")
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        if reader_went_away(info) {
            // `digipology … | head`: the reader closed the pipe. Stop
            // quietly, with the status a shell tool killed by SIGPIPE has.
            std::process::exit(141);
        }
        eprintln!(
            "digipology: internal error ({info}). This is a bug in digipology, not in your game; please report it with the command you ran."
        );
    }));
    let cli = Cli::parse();
    let ceilings = match &cli.command {
        Command::Run(a) => Some(a.ceilings),
        Command::Check(a) => Some(a.ceilings),
        Command::Serve(a) => Some(a.ceilings),
        Command::Simulate(a) => Some(a.ceilings),
        Command::Watch(a) => Some(a.ceilings),
        _ => None,
    };
    if let Some(Err(e)) = ceilings.map(CeilingArgs::apply) {
        eprintln!("digipology: {e}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Command::Run(args) => run(&args),
        Command::Test(args) => return test(&args),
        Command::Check(args) => return check::check(&args.game, args.match_config.as_deref()),
        Command::Watch(args) => watch_cmd(&args),
        Command::Manifest(args) => manifest_cmd(&args.game),
        Command::Serve(args) => serve_cmd(*args),
        Command::Replay(args) => return replay::replay(&args.log, args.game.as_deref()),
        Command::Simulate(args) => match simulate::simulate(&simulate::Options {
            game: args.game,
            matches: args.matches,
            bots: args.bots,
            seed: args.seed,
            jobs: args.jobs,
            match_config: args.match_config,
            out: args.out,
            asserts: args.asserts,
            max_actions: args.max_actions,
            think_ms: args.think_ms,
            stall_ms: args.stall_ms,
        }) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::from(1),
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Game { path, error }) => {
            // Point at the line, not only the JSON path.
            let line = std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| check::locate(&t, &error.path));
            let place = line.map_or_else(
                || path.display().to_string(),
                |l| format!("{}:{l}", path.display()),
            );
            eprintln!(
                "digipology: {place}: {error} (run `digipology check` to list every problem)"
            );
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("digipology: {e}");
            ExitCode::from(2)
        }
    }
}

/// `digipology manifest GAME`: the public manifest as pretty JSON.
fn manifest_cmd(game: &Path) -> Result<(), CliError> {
    let package = Package::load(game)?;
    let room = package::build_room(&package, 0, (None, None))?;
    let doc = digipology_room::matches::manifest(&package, &room);
    println!(
        "{}",
        serde_json::to_string_pretty(&doc).unwrap_or_else(|_| doc.to_string())
    );
    Ok(())
}

fn run(args: &RunArgs) -> Result<(), CliError> {
    // Entities stay text until the room is built: a big table is read one
    // entity at a time.
    let package = Package::load_lean(&args.game)?;
    let overrides = (args.instructions_max, args.memory_max);
    let mut room = match &args.resume {
        Some(save) => package::resume_room(&package, save, overrides)?,
        None => package::build_room(&package, args.seed, overrides)?,
    };
    notices_to_stderr(&mut room);
    let game_id = package
        .json
        .get("id")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
        .to_owned();
    room.fires_max = args.max_end_fires;
    room.view = viewer(&args.view, &package.seats())?;
    match_options(&mut room, args)?;
    if let Some(path) = &args.record {
        start_record(&mut room, args, path, &game_id)?;
    }
    let mut sink = events_sink(args)?;
    let seats = package.seats();
    let players = match (&args.players, &args.actions) {
        (Some(p), _) => p.clone(),
        (None, None) if args.resume.is_none() => default_players(seats.len()),
        (None, _) => Vec::new(),
    };
    let resumed = args.resume.is_some();
    let events_path = PathBuf::from(&args.events);
    let record_path = args.record.clone().unwrap_or_default();
    let io_err = |e: io::Error| match record::record_failure(&e) {
        Some(r) => CliError::Io {
            path: record_path.clone(),
            message: r.to_string(),
        },
        None => CliError::Io {
            path: events_path.clone(),
            message: e.to_string(),
        },
    };
    let setup = |room: &mut Room, file_starts_game: bool, out: &mut dyn Write| -> io::Result<()> {
        if !file_starts_game && !resumed {
            room.start(out)?;
        }
        room.seat_players(&players, &seats, out)
    };
    match &args.actions {
        None => setup(&mut room, false, &mut sink).map_err(io_err)?,
        Some(path) if path == Path::new("-") => {
            let stdin = io::stdin().lock();
            room.run_lines(stdin, setup, &mut sink).map_err(io_err)?;
        }
        Some(path) => {
            let file = File::open(path).map_err(|e| CliError::Io {
                path: path.clone(),
                message: e.to_string(),
            })?;
            room.run_lines(BufReader::new(file), setup, &mut sink)
                .map_err(io_err)?;
        }
    }
    if args.save.is_none() {
        room.fire_due(None, &mut sink).map_err(io_err)?;
    }
    sink.flush().map_err(io_err)?;
    room.flush_record().map_err(io_err)?;
    room.flush_observations().map_err(io_err)?;
    write_outputs(&mut room, args, &game_id)?;
    report(&mut room, &args.view);
    Ok(())
}

/// `--match` (the room's own match config) and `--observations`.
fn match_options(room: &mut Room, args: &RunArgs) -> Result<(), CliError> {
    if let Some(file) = &args.match_config {
        let config = package::match_config_file(file)?;
        package::apply_match(room, config, file)?;
    }
    if let Some(dest) = &args.observations {
        let out: Box<dyn Write> = if dest == "-" {
            Box::new(io::stderr())
        } else {
            Box::new(BufWriter::new(File::create(dest).map_err(|e| {
                CliError::Io {
                    path: PathBuf::from(dest),
                    message: e.to_string(),
                }
            })?))
        };
        room.observe_to(room.view.clone(), out);
    }
    Ok(())
}

/// The closing line on stderr: actions, rejections, and the state hash —
/// or, for a seat or a spectator, the hash of its view.
fn report(room: &mut Room, view_name: &str) {
    if let Some(result) = room.match_result() {
        eprintln!("digipology: {result}");
    }
    match room.view.clone() {
        Viewer::Referee => eprintln!(
            "digipology: {} actions ({} rejected), state hash {}",
            room.processed,
            room.rejected,
            room.kernel().state_hash()
        ),
        view => {
            let hash = digipology_kernel::observe::view_hash(&room.observe(&view));
            eprintln!(
                "digipology: {} actions ({} rejected), view {view_name}, view hash {hash}",
                room.processed, room.rejected,
            );
        }
    }
    if room.rejected > 0 && room.kernel().state().players.is_empty() {
        // The most common first surprise: `--actions` joins nobody.
        eprintln!(
            "digipology: hint: no player has joined, so every player's action was refused (unknown_player): give --players p1,p2,… (joined and seated in seat order before the actions), or put system.player_joined and system.seat_assign lines first"
        );
    }
}

/// Starts `--record`: the header (with the resumed state, when resuming),
/// then a line per action.
fn start_record(
    room: &mut Room,
    args: &RunArgs,
    path: &Path,
    game_id: &str,
) -> Result<(), CliError> {
    let file = File::create(path).map_err(|e| CliError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut header = serde_json::json!({"game": args.game.display().to_string(), "seed": args.seed,
            "instructionsMax": args.instructions_max, "memoryMax": args.memory_max});
    // A room's own match config travels with the record, so a replay
    // runs the same match.
    if let (Some(_), Some(m)) = (&args.match_config, room.match_layer()) {
        header["match"] = m.config.to_json();
    }
    if args.resume.is_some() {
        header["resume"] = serde_json::from_str(&room.save_json(game_id)).map_err(|e| {
                CliError::Io {
                    path: path.to_path_buf(),
                    message: format!("cannot record the resumed room: its state does not fit in a record header ({e})"),
                }
            })?;
    }
    room.record_to(
        Box::new(BufWriter::with_capacity(EVENTS_BUFFER_BYTES, file)),
        header,
    )
    .map_err(|e| CliError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Where events go, and in which form (`--format`, or readable text on a
/// terminal).
fn events_sink(args: &RunArgs) -> Result<Box<dyn Write>, CliError> {
    let readable = match args.format.as_deref() {
        Some("text") => true,
        Some("jsonl") | Some("json") => false,
        Some(other) => {
            return Err(CliError::Io {
                path: PathBuf::from("--format"),
                message: format!("unknown format \"{other}\" (use text or jsonl)"),
            })
        }
        None => args.events == "-" && std::io::IsTerminal::is_terminal(&io::stdout()),
    };
    Ok(if readable {
        Box::new(Readable(open_events(&args.events)?))
    } else {
        open_events(&args.events)?
    })
}

/// `--save` and `--state-out`.
fn write_outputs(room: &mut Room, args: &RunArgs, game_id: &str) -> Result<(), CliError> {
    if let Some(path) = &args.save {
        let text = room.save_json(game_id);
        std::fs::write(path, text + "\n").map_err(|e| CliError::Io {
            path: path.clone(),
            message: e.to_string(),
        })?;
    }
    if let Some(path) = &args.state_out {
        let text = match room.view.clone() {
            Viewer::Referee => room.kernel().state().canonical_json(),
            view => room.observe(&view).to_canonical_json(),
        };
        std::fs::write(path, text).map_err(|e| CliError::Io {
            path: path.clone(),
            message: e.to_string(),
        })?;
    }
    Ok(())
}

/// `--view`: the referee, a spectator, or one of the game's seats.
fn viewer(text: &str, seats: &[String]) -> Result<Viewer, CliError> {
    let view = Viewer::parse(text);
    match &view {
        Viewer::Seat(seat) if !seats.iter().any(|s| **s == **seat) => Err(CliError::Io {
            path: PathBuf::from("--view"),
            message: format!(
                "\"{text}\" is not referee, spectator or one of the game's seats ({})",
                seats.join(", ")
            ),
        }),
        _ => Ok(view),
    }
}

/// A positive byte count for `--memory-max`.
fn positive_usize(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{s:?} is not a positive number of bytes")),
    }
}

/// The room's notices (script `print` lines, bounds reached) go to
/// standard error, as they happen.
pub(crate) fn notices_to_stderr(room: &mut Room) {
    room.on_notice(Box::new(|line| eprintln!("{line}")));
}

fn open_events(dest: &str) -> Result<Box<dyn Write>, CliError> {
    if dest == "-" {
        return Ok(Box::new(BufWriter::with_capacity(
            EVENTS_BUFFER_BYTES,
            io::stdout().lock(),
        )));
    }
    let file = File::create(dest).map_err(|e| CliError::Io {
        path: PathBuf::from(dest),
        message: e.to_string(),
    })?;
    Ok(Box::new(BufWriter::with_capacity(
        EVENTS_BUFFER_BYTES,
        file,
    )))
}

/// The event writer's buffer: a batch of input's events leaves in a few
/// writes (the room flushes it whenever the input read so far is used up).
const EVENTS_BUFFER_BYTES: usize = 64 * 1024;

fn test(args: &TestArgs) -> ExitCode {
    if !["text", "junit"].contains(&args.format.as_str()) {
        eprintln!(
            "digipology: --format: unknown format \"{}\" (use text or junit)",
            args.format
        );
        return ExitCode::from(2);
    }
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    if let Some(missing) = paths.iter().find(|p| !p.exists()) {
        eprintln!(
            "digipology: {}: not found (give game folders, folders of games, or scenario files)",
            missing.display()
        );
        return ExitCode::from(2);
    }
    let found = scenario::discover(&paths);
    let outcomes: Vec<scenario::Outcome> = found
        .iter()
        .map(|(game, file)| scenario::run(game, file))
        .collect();
    let failed = outcomes.iter().filter(|o| o.failure.is_some()).count();
    let passed = outcomes.len() - failed;
    if args.format == "junit" {
        print!("{}", scenario::junit(&outcomes));
    } else {
        for o in &outcomes {
            match &o.failure {
                None => println!("ok    {}  {}", o.file.display(), o.name),
                Some(f) => println!("FAIL  {}  {}\n      {f}", o.file.display(), o.name),
            }
        }
    }
    if outcomes.is_empty() {
        eprintln!("digipology: no scenarios found (they live in each game's tests/ folder, as .json files)");
    }
    let summary = format!("{passed} passed, {failed} failed");
    if args.format == "junit" {
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
    if failed > 0 || outcomes.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Turns JSONL event lines into readable ones: `#seq  type  sentence`
/// (the sentence the table page's log shows, `digipology_room::sentence`).
struct Readable<W: Write>(W);

impl<W: Write> Write for Readable<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for line in String::from_utf8_lossy(buf).lines() {
            match serde_json::from_str::<serde_json::Value>(line) {
                Ok(e) => {
                    let said = digipology_room::sentence::sentence(&e);
                    let ty = e["type"].as_str().unwrap_or("");
                    let seq = e["seq"].to_string();
                    writeln!(self.0, "#{seq:<4} {ty:<18} {said}")?;
                }
                Err(_) if line.is_empty() => {}
                Err(_) => writeln!(self.0, "{line}")?,
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

fn watch_cmd(args: &WatchArgs) -> Result<(), CliError> {
    let seats = Package::load(&args.game)?.seats();
    let players = match (&args.players, &args.actions) {
        (Some(p), _) => p.clone(),
        (None, None) => default_players(seats.len()),
        (None, Some(_)) => Vec::new(),
    };
    watch::watch(&watch::Options {
        game: args.game.clone(),
        seed: args.seed,
        actions: args.actions.clone(),
        players,
        replay_on_change: args.replay_on_change,
    })
}

/// The players a room seats when none are named: `p1`, `p2`, … one per
/// seat, in the game's seat order.
pub(crate) fn default_players(seats: usize) -> Vec<String> {
    (1..=seats).map(|i| format!("p{i}")).collect()
}

/// `digipology serve`: the room service (docs/server.md).
fn serve_cmd(args: ServeArgs) -> Result<(), CliError> {
    let games = if args.games.is_empty() {
        example_games()?
    } else {
        args.games
    };
    let options = digipology_server::Options {
        games,
        addr: args.addr,
        data: args.data.clone(),
        max_body_bytes: args.max_body_bytes,
        rate_per_sec: args.rate,
        rate_burst: args.burst,
        max_rooms: args.max_rooms,
        max_connections: args.max_connections,
        max_streams_per_token: args.max_streams_per_token,
        grace_ms: args.grace_ms,
        abandon_after_ms: args.abandon_after_ms,
        room_threads: args.room_threads,
        max_inputs_per_match: args.max_inputs_per_match,
        long_poll_max_ms: args.long_poll_max_ms,
        header_timeout_ms: args.header_timeout_ms,
        watch: args.watch,
        room_stall_ms: args.room_stall_ms,
    };
    let data = args.data;
    let stopped = digipology_server::serve(options, |addr, games, left_out| {
        // Tests and scripts read the address from this line.
        let plural = if games == 1 { "" } else { "s" };
        let left_out = match left_out {
            0 => String::new(),
            n => format!("; {n} found not served, named above"),
        };
        println!(
            "digipology: serving {games} game{plural} on http://{addr} (log: {}{left_out})",
            data.display()
        );
        let _ = io::stdout().flush();
    })
    .map_err(|message| CliError::Io {
        path: PathBuf::from("serve"),
        message,
    })?;
    eprintln!("digipology: serve: {}", stopped.line());
    Ok(())
}

/// ./examples, a folder of games (what `serve` offers by default).
fn example_games() -> Result<Vec<PathBuf>, CliError> {
    let root = PathBuf::from("examples");
    if !root.is_dir() {
        return Err(CliError::Io {
            path: root,
            message: "not found (name the game folders to serve, or run from the repository)"
                .to_owned(),
        });
    }
    Ok(vec![root])
}
