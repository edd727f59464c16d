//! The headless room host: seats players, feeds ordered actions to the
//! kernel, and streams events out as JSONL.

use std::io::{BufRead, Write};

use digipology_kernel::{
    Action, Kernel, NoScripts, Outcome, RejectCode, Rejection, ScriptHost, Source, State,
};
use digipology_lua::LuaHost;
use serde_json::json;

use crate::jsonl::{Line, Lines, LINE_BYTES_MAX};

/// A running room.
pub struct Room {
    kernel: Kernel,
    scripts: Option<Box<LuaHost>>,
    no_scripts: NoScripts,
    /// Actions processed so far.
    pub processed: u64,
    /// Of those, rejected.
    pub rejected: u64,
}

impl Room {
    /// A room over a starting state, with scripts when there are any.
    pub fn new(state: State, scripts: Option<LuaHost>) -> Room {
        Room {
            kernel: Kernel::new(state),
            scripts: scripts.map(Box::new),
            no_scripts: NoScripts,
            processed: 0,
            rejected: 0,
        }
    }

    /// The kernel and the script host, borrowed together.
    fn parts(&mut self) -> (&mut Kernel, &mut dyn ScriptHost) {
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

    /// The kernel (state, hash).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    fn record(&mut self, out: Outcome, events: &mut dyn Write) -> std::io::Result<()> {
        for line in self.take_log() {
            eprintln!("{line}");
        }
        self.processed += 1;
        if !out.accepted() {
            self.rejected += 1;
        }
        for e in &out.events {
            events.write_all(e.to_json_line().as_bytes())?;
            events.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Processes one action built by the host.
    ///
    /// # Errors
    /// Writing events failed.
    pub fn submit(&mut self, action: &Action, events: &mut dyn Write) -> std::io::Result<()> {
        let (kernel, host) = self.parts();
        let out = kernel.process(action, host);
        self.record(out, events)
    }

    /// Processes one raw input line (bytes, maybe not UTF-8).
    ///
    /// # Errors
    /// Writing events failed.
    pub fn submit_line(&mut self, line: &Line, events: &mut dyn Write) -> std::io::Result<()> {
        let out = match line {
            Line::TooLong(len) => self.kernel.reject_input(
                None,
                None,
                Rejection::new(
                    RejectCode::MalformedAction,
                    format!("line of {len} bytes exceeds the {LINE_BYTES_MAX}-byte limit"),
                ),
            ),
            Line::Bytes(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => {
                    let (kernel, host) = self.parts();
                    kernel.process_line(text, host)
                }
                Err(e) => self.kernel.reject_input(
                    None,
                    None,
                    Rejection::new(
                        RejectCode::MalformedAction,
                        format!("line is not UTF-8: {e}"),
                    ),
                ),
            },
        };
        self.record(out, events)
    }

    /// `system.game_start` with the manifest's settings.
    ///
    /// # Errors
    /// Writing events failed.
    pub fn start(&mut self, events: &mut dyn Write) -> std::io::Result<()> {
        self.submit(&system("system.game_start", json!({})), events)
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
            self.submit(
                &system("system.player_joined", json!({ "playerId": p })),
                events,
            )?;
            if let Some(seat) = seats.get(i) {
                let payload = json!({ "playerId": p, "seatId": seat });
                self.submit(&system("system.seat_assign", payload), events)?;
            }
        }
        Ok(())
    }

    /// Processes every line of `input`; blank lines are skipped. When the
    /// first action is itself `system.game_start`, `start_if_missing` is not
    /// needed and the host does not inject one.
    ///
    /// # Errors
    /// Reading input or writing events failed.
    pub fn run_lines(
        &mut self,
        input: impl BufRead,
        mut before_first: impl FnMut(&mut Room, bool, &mut dyn Write) -> std::io::Result<()>,
        events: &mut dyn Write,
    ) -> std::io::Result<()> {
        let mut lines = Lines::new(input, LINE_BYTES_MAX);
        let mut first = true;
        while let Some(line) = lines.next_line()? {
            if let Line::Bytes(b) = &line {
                if b.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
            }
            if first {
                first = false;
                before_first(self, starts_game(&line), events)?;
            }
            self.submit_line(&line, events)?;
        }
        if first {
            before_first(self, false, events)?;
        }
        Ok(())
    }
}

fn system(action_type: &str, payload: serde_json::Value) -> Action {
    Action::new(action_type, Source::System, payload)
}

fn starts_game(line: &Line) -> bool {
    let Line::Bytes(b) = line else { return false };
    serde_json::from_slice::<serde_json::Value>(b)
        .ok()
        .and_then(|v| {
            v.get("type")
                .and_then(|t| t.as_str())
                .map(|t| t == "system.game_start")
        })
        .unwrap_or(false)
}
