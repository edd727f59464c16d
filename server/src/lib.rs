//! The room service (docs/server.md): `digipology serve` runs rooms as
//! tasks behind a local HTTP+JSON API, each input durable in the room log
//! before it is acknowledged, every room recovered from that log when the
//! server starts again.
#![warn(clippy::too_many_lines)]

mod audit;
pub mod catalog;
pub mod feed;
pub mod folder;
pub mod http;
pub mod hub;
pub mod limits;
pub mod live;
pub mod page;
pub mod reload;
pub mod stop;
pub mod store;
pub mod watchdog;

use std::path::PathBuf;
use std::sync::Arc;

/// How the server runs (the `serve` command's flags).
#[derive(Clone, Debug)]
pub struct Options {
    /// Games to offer: game folders, and folders of games
    /// ([`catalog::load`]).
    pub games: Vec<PathBuf>,
    /// Where to listen (loopback by default).
    pub addr: String,
    /// Where the log lives.
    pub data: PathBuf,
    /// Largest request body (bytes).
    pub max_body_bytes: usize,
    /// Requests per second a token (or the anonymous bucket) may make.
    pub rate_per_sec: u32,
    /// How many requests a token may make at once above that rate.
    pub rate_burst: u32,
    /// Most matches open or running at once.
    pub max_rooms: usize,
    /// Most connections at once.
    pub max_connections: usize,
    /// Most event streams one token may hold open.
    pub max_streams_per_token: usize,
    /// A seat's grace after its last stream dropped (ms).
    pub grace_ms: u64,
    /// A running match with no input for this long is aborted (ms; 0:
    /// never).
    pub abandon_after_ms: u64,
    /// Threads running rooms.
    pub room_threads: usize,
    /// Most inputs one match may log.
    pub max_inputs_per_match: u64,
    /// Longest long poll (ms).
    pub long_poll_max_ms: u64,
    /// How long a connection may take to send a request's head (ms).
    pub header_timeout_ms: u64,
    /// Reload a game's rooms when its files change (`--watch`).
    pub watch: bool,
    /// The longest one input of a room may run (ms) before the watchdog
    /// stops its game and the match is aborted (docs/server.md, A game
    /// that stalls).
    pub room_stall_ms: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            games: Vec::new(),
            addr: "127.0.0.1:7878".into(),
            data: PathBuf::from("digipology-data"),
            max_body_bytes: 64 * 1024,
            rate_per_sec: 50,
            rate_burst: 100,
            max_rooms: 1000,
            max_connections: 1024,
            max_streams_per_token: 4,
            grace_ms: 30_000,
            abandon_after_ms: 86_400_000,
            room_threads: 2,
            max_inputs_per_match: 100_000,
            long_poll_max_ms: 30_000,
            header_timeout_ms: 10_000,
            watch: false,
            room_stall_ms: 10_000,
        }
    }
}

/// Loads the games, opens the log, recovers every room, listens, and
/// serves until SIGTERM or Ctrl-C, then stops ([`stop::stop`]). `ready`
/// is told the address it listens on, how many games it serves and how
/// many found in folders of games it left out.
///
/// # Errors
/// A game cannot be loaded, the log cannot be opened or recovered or is
/// damaged (`folder::open_log`), the address cannot be bound, the
/// signals cannot be taken over, the log's last writes failed.
pub fn serve(
    options: Options,
    ready: impl FnOnce(std::net::SocketAddr, usize, usize),
) -> Result<stop::Stopped, String> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let catalog = catalog::load(&options.games)?;
    let left_out = catalog.left_out.len();
    // Bound first: a bad or busy address leaves the data folder alone.
    let bound = std::net::TcpListener::bind(&options.addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
    // A folder that was there already and gets a new log is warned about
    // (a mistyped path, or a disk that is not mounted).
    let existed = options.data.is_dir();
    std::fs::create_dir_all(&options.data)
        .map_err(|e| format!("{}: {e}", options.data.display()))?;
    // Held while the server runs: one server per data folder.
    let _lock = lock_data(&options.data)?;
    // A folder whose log lost something is refused here, before serving.
    let log: Arc<dyn store::RoomLog> = Arc::new(folder::open_log(&options.data, existed)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let hub = hub::Hub::new(options.clone(), catalog.games, log.clone())?;
    let recovered = hub.recover_all()?;
    // Kept for as long as the server runs: dropping them stops watching.
    let _watchers = if options.watch {
        reload::watch(&hub)?
    } else {
        Vec::new()
    };
    if recovered > 0 {
        tracing::info!("recovered {recovered} running matches from the log");
    }
    let stopped = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(bound)
            .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot read the bound address: {e}"))?;
        // Taken over before the address is told: a signal from then on
        // stops the server, never kills it half way.
        let mut signals = stop::Signals::listen()?;
        ready(addr, hub.games().len(), left_out);
        let mut signal = "";
        let open = http::serve(listener, hub.clone(), async {
            signal = signals.next().await;
        })
        .await;
        stop::stop(&hub, open, signal, &mut signals).await
    });
    // Tasks still running (connections cut, replays) are left to end
    // with the process.
    runtime.shutdown_background();
    // The log stays open until the process ends, as at any other stop:
    // SQLite keeps its `-wal` (docs/server.md, Log damage), and no
    // checkpoint runs while the process exits.
    std::mem::forget(log);
    stopped
}

/// Takes the data folder's lock (`DATA/lock`, an exclusive file lock the
/// system lets go when the process ends, however it ends): two servers on
/// one log would each run the same matches and write over each other.
///
/// # Errors
/// Another process holds the lock, or the file cannot be opened.
fn lock_data(data: &std::path::Path) -> Result<std::fs::File, String> {
    let path = data.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "{} is in use by another digipology serve (it holds {}); stop that one or give --data another folder",
            data.display(),
            path.display()
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(format!("{}: {e}", path.display())),
    }
}
