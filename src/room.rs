//! The headless room host: seats players, feeds ordered actions to the
//! kernel, and streams events out as JSONL.

use std::io::{BufRead, Write};

use digipology_kernel::{
    Action, Kernel, NoScripts, Outcome, RejectCode, Rejection, ScriptHost, Source, State,
};
use serde_json::json;

use crate::jsonl::{Line, Lines, LINE_BYTES_MAX};

/// A running room.
pub struct Room {
    kernel: Kernel,
    host: Box<dyn ScriptHost>,
    /// Actions processed so far.
    pub processed: u64,
    /// Of those, rejected.
    pub rejected: u64,
}

impl Room {
    /// A room over a starting state, with no scripts.
    pub fn new(state: State) -> Room {
        Room {
            kernel: Kernel::new(state),
            host: Box::new(NoScripts),
            processed: 0,
            rejected: 0,
        }
    }

    /// The kernel (state, hash).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    fn record(&mut self, out: Outcome, events: &mut dyn Write) -> std::io::Result<()> {
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
        let out = self.kernel.process(action, self.host.as_mut());
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
                Ok(text) => self.kernel.process_line(text, self.host.as_mut()),
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
