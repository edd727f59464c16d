//! Observations (seed 004: observe; docs/match.md, Observations): what one
//! viewer receives of a match — `{seq, seat, phase, participation, clocks,
//! resources, view, legalActions, result}` — built from the book and the
//! kernel's projection, each part as the config lets that viewer see it.

use digipology_kernel::{Sight, State, Viewer};
use serde_json::{json, Map, Value};

use super::{MatchLayer, MatchResult, Visibility};

/// The most candidate actions a default `legalActions` dry-runs.
pub const CANDIDATES_MAX: usize = 256;

/// The match parts of an observation (all but `view` and
/// `legalActions`), for `viewer` at room time `now`.
pub fn match_parts(
    layer: Option<&MatchLayer>,
    state: &State,
    viewer: &Viewer,
    now: i64,
) -> Map<String, Value> {
    let mut out = Map::new();
    let seq = state
        .sequence
        .checked_sub(1)
        .map_or(Value::Null, Value::from);
    out.insert("seq".into(), seq);
    let seat = match viewer {
        Viewer::Seat(s) => Some(s.to_string()),
        _ => None,
    };
    out.insert("seat".into(), json!(seat));
    let Some(layer) = layer else {
        for k in ["phase", "participation", "result"] {
            out.insert(k.into(), Value::Null);
        }
        out.insert("clocks".into(), json!({}));
        out.insert("resources".into(), json!({}));
        return out;
    };
    let book = &layer.book;
    out.insert("phase".into(), json!(book.phase));
    let participation = |s: &str| book.seats.get(s).map(|b| b.participation.as_str());
    out.insert(
        "participation".into(),
        match &seat {
            Some(s) => json!(participation(s)),
            None if *viewer == Viewer::Referee => json!(book
                .seats
                .iter()
                .map(|(k, b)| (k.clone(), json!(b.participation.as_str())))
                .collect::<Map<_, _>>()),
            None => Value::Null,
        },
    );
    out.insert("clocks".into(), clocks(layer, viewer, now));
    out.insert("resources".into(), resources(layer, viewer));
    let result = match &book.result {
        Some(MatchResult::MatchOver { scores }) => {
            json!({"status": "match_over", "scores": scores})
        }
        Some(MatchResult::MatchAborted { reason }) => {
            json!({"status": "match_aborted", "reason": reason})
        }
        None => match seat.as_deref().and_then(participation) {
            Some("finished") => json!({"status": "seat_finished"}),
            Some("waiting") => json!({"status": "waiting"}),
            Some(_) => json!({"status": "acting"}),
            None => json!({"status": "in_progress"}),
        },
    };
    out.insert("result".into(), result);
    out
}

/// Whether `viewer` sees the private parts of seat `id`'s bookkeeping.
fn owns(viewer: &Viewer, id: &str) -> bool {
    match viewer {
        Viewer::Referee => true,
        Viewer::Seat(s) => &**s == id,
        Viewer::Spectator => false,
    }
}

/// Clocks: a seat sees its own; others' only when clocks are public.
fn clocks(layer: &MatchLayer, viewer: &Viewer, now: i64) -> Value {
    let book = &layer.book;
    let mut seats = Map::new();
    for (id, b) in &book.seats {
        if !(owns(viewer, id) || layer.config.clock_visibility == Visibility::Public) {
            continue;
        }
        let decision = match (b.decision_since, layer.config.decision_limit_ms) {
            (Some(since), Some(limit)) => {
                json!(since.saturating_add(limit).saturating_sub(now).max(0))
            }
            _ => Value::Null,
        };
        seats.insert(
            id.clone(),
            json!({
                "totalMs": MatchLayer::clock_left(b, now),
                "decisionMs": decision,
                "running": b.running_since.is_some(),
            }),
        );
    }
    let phase_ms = book
        .phase
        .as_ref()
        .and_then(|p| layer.config.phase_limits.get(p))
        .map(|l| {
            book.phase_since
                .saturating_add(l.ms)
                .saturating_sub(now)
                .max(0)
        });
    json!({"now": now, "phaseMs": phase_ms, "seats": seats})
}

/// Resources: a seat sees all of its own balances and the public ones of
/// every seat; a spectator only the public ones.
fn resources(layer: &MatchLayer, viewer: &Viewer) -> Value {
    let mut out = Map::new();
    for (id, b) in &layer.book.seats {
        let own = owns(viewer, id);
        let shown: Map<String, Value> = b
            .balances
            .iter()
            .filter(|(name, _)| {
                own || layer
                    .config
                    .resources
                    .get(*name)
                    .is_some_and(|r| r.visibility == Visibility::Public)
            })
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        if !shown.is_empty() {
            out.insert(id.clone(), Value::Object(shown));
        }
    }
    Value::Object(out)
}

/// Candidate actions for a seat's default legal actions: answers to its
/// open prompts, and the obvious action on each entity it fully sees
/// (never one it cannot: a hidden card is no candidate). Each is dry-run
/// by the room; those that would commit are legal.
pub fn candidates(state: &State, seat: &str, player: &str) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    prompt_answers(state, player, &mut out);
    piece_actions(state, seat, player, &mut out);
    out.truncate(CANDIDATES_MAX);
    out
}

/// Answers to the player's open prompts: every choice, yes and no, or a
/// number prompt's bounds and default.
fn prompt_answers(state: &State, player: &str, out: &mut Vec<(String, Value)>) {
    for (id, p) in &state.prompts {
        if !p.is_open() || &*p.player_id != player {
            continue;
        }
        let mut answers: Vec<Value> = Vec::new();
        match p.kind.as_str() {
            "choice" => answers.extend(p.choices.iter().flatten().map(|c| c.to_json())),
            "confirm" => answers.extend([json!(true), json!(false)]),
            _ => {
                for v in [p.min, p.max] {
                    answers.extend(v.map(|n| json!(n)));
                }
                if p.default != digipology_kernel::Value::Null {
                    answers.push(p.default.to_json());
                }
                answers.dedup();
            }
        }
        for a in answers {
            out.push((
                "prompt.respond".into(),
                json!({"promptId": id.to_string(), "response": a}),
            ));
        }
    }
}

/// The obvious action on each piece the seat fully sees.
fn piece_actions(state: &State, seat: &str, player: &str, out: &mut Vec<(String, Value)>) {
    let viewer = Viewer::Seat(seat.into());
    let entities = state.entities_sorted();
    // Where a held piece may be put besides where it is: the place of
    // each snap point with room left (the kernel snaps it there).
    let snaps: Vec<&digipology_kernel::transform::Transform> = entities
        .iter()
        .filter(|e| state.sight(e, &viewer) == Sight::Known)
        .filter_map(|e| {
            let s = e.components.snap_point.as_ref()?;
            let free = s
                .capacity
                .is_none_or(|c| u64::try_from(s.attached.len()).unwrap_or(u64::MAX) < c);
            free.then_some(e.components.transform.as_ref()?)
        })
        .collect();
    let json_of = |t: &digipology_kernel::transform::Transform| -> Value {
        serde_json::from_str(&t.to_value().to_canonical_json()).unwrap_or(Value::Null)
    };
    for e in entities {
        if state.sight(e, &viewer) != Sight::Known {
            continue;
        }
        let id = e.id.to_string();
        let c = &e.components;
        let mut add = |t: &str, payload: Value| out.push((t.to_owned(), payload));
        if c.button.is_some_and(|b| b.enabled) {
            add("button.press", json!({"entityId": id}));
        }
        if c.die.is_some() {
            add("die.roll", json!({"entityId": id}));
        }
        if c.deck.is_some_and(|d| d.enabled) && c.container.is_some() {
            add("deck.shuffle", json!({"deckId": id}));
        }
        if c.flippable.is_some() {
            add("entity.flip", json!({"entityId": id}));
        }
        if c.counter.is_some() {
            add("counter.add", json!({"entityId": id, "amount": 1}));
            add("counter.add", json!({"entityId": id, "amount": -1}));
        }
        match (&e.held_by, c.grabbable) {
            (Some(who), _) if &**who == player => {
                if let Some(t) = c.transform {
                    add(
                        "entity.drop",
                        json!({"entityId": id, "transform": json_of(&t)}),
                    );
                    // (A snap point where the piece is already adds nothing.)
                    for snap in snaps.iter().filter(|s| s.position != t.position) {
                        let onto = digipology_kernel::transform::Transform {
                            position: snap.position,
                            ..t
                        };
                        add(
                            "entity.drop",
                            json!({"entityId": id, "transform": json_of(&onto)}),
                        );
                    }
                }
            }
            (None, Some(g)) if g.enabled => add("entity.grab", json!({"entityId": id})),
            _ => {}
        }
        if out.len() >= CANDIDATES_MAX {
            break;
        }
    }
}
