//! match.finish, match.abort, match.halt, match.host_event, match.sense.
//!
//! The match contract (docs/match.md): the room keeps the match's
//! bookkeeping under the state's `match` key; these rows only announce, as
//! events, what the room then records — a result the game declared, or an
//! expiry the room sequenced — so a result declared inside an action that
//! rolls back never happened.

use crate::action::Action;
use crate::event::EventKind;
use crate::payload::Payload;
use crate::reject::{reject, RejectCode, Rejection};
use crate::txn::Txn;
use crate::value::Value;

/// The host-event kinds the room raises (seed 004's trusted expiries).
pub const HOST_EVENT_KINDS: [&str; 5] = [
    "player_time_exhausted",
    "decision_expired",
    "invalid_retries_exhausted",
    "phase_deadline",
    "phase_ready",
];

fn need_match(txn: &Txn<'_>, what: &str) -> Result<(), Rejection> {
    if txn.state().match_book.is_some() {
        Ok(())
    } else {
        reject(
            RejectCode::NoMatch,
            format!("{what}: this room runs no match (the game has no \"match\" in game.json)"),
        )
    }
}

/// Ends the match with scores: `{seat: finite number}` for seats of the
/// game.
pub(crate) fn finish(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["scores"])?;
    let scores = match p.opt("scores") {
        Some(serde_json::Value::Object(m)) => m,
        Some(_) => {
            return reject(
                RejectCode::InvalidType,
                "payload.scores must be an object of seat → number",
            )
        }
        None => return reject(RejectCode::MissingField, "payload.scores is required"),
    };
    let mut out = std::collections::BTreeMap::new();
    for (seat, v) in &scores {
        if !txn.state().seats.contains_key(seat.as_str()) {
            return reject(
                RejectCode::InvalidValue,
                format!("payload.scores: \"{seat}\" is not a seat of this game"),
            );
        }
        match v.as_f64() {
            Some(n) if n.is_finite() => {
                out.insert(seat.clone(), Value::Number(if n == 0.0 { 0.0 } else { n }));
            }
            _ => {
                return reject(
                    RejectCode::InvalidType,
                    format!("payload.scores.{seat} must be a finite number"),
                )
            }
        }
    }
    need_match(txn, "match.finish")?;
    txn.emit(EventKind::MatchOver {
        scores: Value::Object(out),
    });
    Ok(())
}

/// Ends the match without a result, with a reason (at most 256 bytes).
pub(crate) fn abort(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    end_without_result(txn, action, "match.abort")
}

fn end_without_result(txn: &mut Txn<'_>, action: &Action, name: &str) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["reason"])?;
    let reason = p.str("reason")?;
    if reason.len() > 256 {
        return reject(
            RejectCode::InvalidValue,
            "payload.reason is longer than 256 bytes",
        );
    }
    need_match(txn, name)?;
    txn.emit(EventKind::MatchAborted {
        reason: reason.to_owned(),
    });
    Ok(())
}

/// Ends the match without a result and without asking the game: what
/// `match.abort` does, but no script runs — not a guard, not a handler
/// (the kernel delivers its events to none: `kernel.rs`, `execute`). The
/// host's way to end a match whose game it will not run again (a game that
/// stalled the server; docs/server.md, A game that stalls).
pub(crate) fn halt(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    end_without_result(txn, action, "match.halt")
}

/// Announces an expiry to the game (`on_host_event`): `{kind, seat,
/// phase}`, seat and phase null or a name.
pub(crate) fn host_event(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["kind", "seat", "phase"])?;
    let kind = p.str("kind")?;
    if !HOST_EVENT_KINDS.contains(&kind) {
        return reject(
            RejectCode::InvalidValue,
            format!(
                "payload.kind must be one of {}",
                HOST_EVENT_KINDS.join(", ")
            ),
        );
    }
    let seat = match p.str_or_null("seat")? {
        Some(s) => match txn.state().seats.get_key_value(s) {
            Some((id, _)) => Some(id.clone()),
            None => {
                return reject(
                    RejectCode::InvalidValue,
                    format!("payload.seat: \"{s}\" is not a seat of this game"),
                )
            }
        },
        None => None,
    };
    let phase = p.str_or_null("phase")?.map(str::to_owned);
    need_match(txn, "match.host_event")?;
    txn.emit(EventKind::MatchHostEvent {
        kind: kind.to_owned(),
        seat,
        phase,
    });
    Ok(())
}

/// A sensing tool's answer, computed by the room before the action
/// (docs/match.md, Sensing tools): `{name, input, answer}` from a seated
/// player. The room adds `answer`; a seat's own input never carries one
/// (the room's schema check refuses it).
pub(crate) fn sense(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["name", "input", "answer"])?;
    let name = p.str("name")?.to_owned();
    let input = json_value(p.opt("input"), "input")?;
    let answer = json_value(p.opt("answer"), "answer")?;
    need_match(txn, "match.sense")?;
    let player = action.source.player_id().unwrap_or_default();
    let Some(seat) = txn.state().seat_of(player).cloned() else {
        return reject(
            RejectCode::InvalidValue,
            format!("match.sense: player \"{player}\" has no seat"),
        );
    };
    txn.emit(EventKind::MatchSensed {
        seat,
        name,
        input,
        answer,
    });
    Ok(())
}

fn json_value(v: Option<serde_json::Value>, key: &str) -> Result<Value, Rejection> {
    match v {
        None => Ok(Value::Null),
        Some(j) => Value::from_json(&j).map_err(|e| {
            Rejection::new(
                RejectCode::InvalidValue,
                format!("payload.{key}: {}", e.message),
            )
        }),
    }
}
