//! How the server stops (docs/server.md, Stopping): on SIGTERM or Ctrl-C
//! (SIGINT) it takes no new connection, answers the requests in flight
//! (long polls at once, event streams end), stops its rooms once what
//! they did is handed to the log, and waits for the log to make it
//! durable. A second signal stops the waiting for requests and rooms.

use std::sync::Arc;
use std::time::Duration;

use crate::http::Open;
use crate::hub::Hub;

/// The longest the server waits for the requests in flight to be
/// answered once it stops (a room still running an input holds its
/// request; the watchdog ends a stalled one after `--room-stall-ms`).
pub const REQUESTS_WAIT: Duration = Duration::from_secs(10);

/// The longest it then waits for its rooms to finish the input each is
/// running.
pub const ROOMS_WAIT: Duration = Duration::from_secs(10);

/// The signals that stop the server, as they arrive.
pub struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Takes SIGTERM and SIGINT over from here on (within the runtime).
    ///
    /// # Errors
    /// The system refuses a handler.
    pub fn listen() -> Result<Signals, String> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let fail = |e: std::io::Error| format!("cannot take over SIGTERM and SIGINT: {e}");
            Ok(Signals {
                term: signal(SignalKind::terminate()).map_err(fail)?,
                int: signal(SignalKind::interrupt()).map_err(fail)?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The next signal's name.
    pub async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

/// How a stop went.
#[derive(Debug)]
pub struct Stopped {
    /// The signal that stopped the server.
    pub signal: &'static str,
    /// A second signal cut the waiting short.
    pub hurried: bool,
    /// Connections still open when the server stopped waiting (their
    /// requests unanswered: their clients retry once it is back).
    pub cut: usize,
    /// Rooms stopped, or `None` when the server stopped waiting for them
    /// (an input a room was running then is not in the log: it never
    /// happened).
    pub rooms: Option<usize>,
}

impl Stopped {
    /// The line the server's stop is told with.
    pub fn line(&self) -> String {
        let signal = self.signal;
        let mut line = format!("stopped on {signal}");
        if self.hurried {
            line.push_str(" (signalled again: without waiting)");
        }
        if self.cut == 0 {
            line.push_str(": every request in flight was answered");
        } else {
            line.push_str(&format!(
                ": {} connections were cut with their requests unanswered (a client retries the same clientActionId once the server is back)",
                self.cut
            ));
        }
        match self.rooms {
            Some(n) => line.push_str(&format!("; {n} rooms stopped")),
            None => line.push_str(
                "; rooms were not waited for (an input one was running is not in the log: it never happened)",
            ),
        }
        line.push_str("; everything acknowledged is in the log");
        line
    }
}

/// Stops the server after `signal`: connections first (`open`, from
/// `http::serve`), then rooms, then the log, each wait bounded and cut
/// short by another signal.
///
/// # Errors
/// The log failed to make its last writes durable.
pub async fn stop(
    hub: &Arc<Hub>,
    open: Open,
    signal: &'static str,
    signals: &mut Signals,
) -> Result<Stopped, String> {
    tracing::info!(
        "{signal}: stopping: no new connections; answering the {} open (send it again to stop without waiting)",
        open.count()
    );
    hub.begin_stop();
    let mut hurried = false;
    tokio::select! {
        _ = tokio::time::timeout(REQUESTS_WAIT, open.all_closed()) => {}
        again = signals.next() => {
            tracing::warn!("{again} again: stopping without waiting for requests or rooms");
            hurried = true;
        }
    }
    let cut = open.count();
    let mut rooms = None;
    if !hurried {
        tokio::select! {
            n = tokio::time::timeout(ROOMS_WAIT, hub.stop_rooms()) => rooms = n.ok(),
            again = signals.next() => {
                tracing::warn!("{again} again: stopping without waiting for the rooms");
                hurried = true;
            }
        }
    }
    // Whatever the rooms and the lobby handed to the log is committed
    // before the process ends: no write is left half done.
    match hub.log.flush().await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("the log's last writes failed: {e}")),
        Err(_) => return Err("the log's writer had stopped".to_owned()),
    }
    Ok(Stopped {
        signal,
        hurried,
        cut,
        rooms,
    })
}
