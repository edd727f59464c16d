//! Observations (seed 004: observe; docs/match.md, Observations): what one
//! viewer receives of a match — `{seq, seat, phase, participation, clocks,
//! resources, view, legalActions, result}` — built from the book and the
//! kernel's projection, each part as the config lets that viewer see it.

use digipology_kernel::transform::Transform;
use digipology_kernel::{Entity, Sight, State, Viewer};
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
            let mut result = json!({"status": "match_over", "scores": scores});
            layer.config.rank_result(&mut result);
            result
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

/// One candidate action of a seat, cheap to list: its payload is built
/// only when it is tried ([`Candidate::payload`], [`Candidate::action`]).
#[derive(Clone, Debug)]
pub enum Candidate {
    /// An answer to an open prompt.
    Respond {
        /// The prompt's id.
        prompt: String,
        /// The answer.
        response: Value,
    },
    /// An action naming one entity: `ty` with `{key: id}`.
    On {
        /// The action type.
        ty: &'static str,
        /// The payload field naming the entity.
        key: &'static str,
        /// The entity.
        id: digipology_kernel::Id,
    },
    /// `counter.add` of `amount`.
    Add {
        /// The counter.
        id: digipology_kernel::Id,
        /// What is added.
        amount: i32,
    },
    /// `entity.drop` of a held piece with this transform.
    Drop {
        /// The piece.
        id: digipology_kernel::Id,
        /// Where it goes.
        transform: Transform,
    },
}

impl Candidate {
    /// The action type.
    pub fn action_type(&self) -> &'static str {
        match self {
            Candidate::Respond { .. } => "prompt.respond",
            Candidate::On { ty, .. } => ty,
            Candidate::Add { .. } => "counter.add",
            Candidate::Drop { .. } => "entity.drop",
        }
    }

    /// The payload, as JSON.
    pub fn payload(&self) -> Value {
        match self {
            Candidate::Respond { prompt, response } => {
                json!({"promptId": prompt, "response": response})
            }
            Candidate::On { key, id, .. } => {
                let mut m = Map::new();
                m.insert((*key).to_owned(), Value::String(id.to_string()));
                Value::Object(m)
            }
            Candidate::Add { id, amount } => json!({"entityId": &**id, "amount": amount}),
            Candidate::Drop { id, transform } => {
                json!({"entityId": &**id, "transform": transform.to_value().to_json()})
            }
        }
    }

    /// The action as `player` sends it.
    pub fn action(&self, player: &digipology_kernel::Id) -> digipology_kernel::Action {
        use digipology_kernel::payload::{FieldValue, Fields};
        let mut fields = Fields::new();
        match self {
            Candidate::Respond { prompt, response } => {
                fields.set("promptId", FieldValue::from(Value::String(prompt.clone())));
                fields.set("response", FieldValue::from(response.clone()));
            }
            Candidate::On { key, id, .. } => fields.set(key, FieldValue::from(&**id)),
            Candidate::Add { id, amount } => {
                fields.set("entityId", FieldValue::from(&**id));
                fields.set("amount", FieldValue::Num(f64::from(*amount)));
            }
            Candidate::Drop { id, transform } => {
                fields.set("entityId", FieldValue::from(&**id));
                fields.set("transform", FieldValue::from(*transform));
            }
        }
        digipology_kernel::Action::with_fields(
            digipology_kernel::action::TypeName::new(self.action_type()),
            digipology_kernel::Source::Player {
                player_id: player.clone(),
            },
            fields,
        )
    }
}

/// Candidate actions for a seat's default legal actions: answers to its
/// open prompts, and the obvious action on each entity it fully sees
/// (never one it cannot: a hidden card is no candidate). Each is dry-run
/// by the room; those that would commit are legal. `theirs` says which
/// entities another seat owns: no candidate names one.
pub fn candidates(
    state: &State,
    (seat, player): (&str, &str),
    theirs: &dyn Fn(&Entity) -> bool,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    prompt_answers(state, player, &mut out);
    piece_actions(state, (seat, player), theirs, &mut out);
    out.truncate(CANDIDATES_MAX);
    out
}

/// Answers to the player's open prompts: every choice, yes and no, or a
/// number prompt's bounds and default.
fn prompt_answers(state: &State, player: &str, out: &mut Vec<Candidate>) {
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
        for response in answers {
            out.push(Candidate::Respond {
                prompt: id.to_string(),
                response,
            });
        }
    }
}

/// The obvious action on each piece the seat fully sees.
fn piece_actions(
    state: &State,
    (seat, player): (&str, &str),
    theirs: &dyn Fn(&Entity) -> bool,
    out: &mut Vec<Candidate>,
) {
    let viewer = Viewer::Seat(seat.into());
    let entities: Vec<_> = state
        .entities_sorted()
        .into_iter()
        .filter(|e| state.sight(e, &viewer) == Sight::Known)
        .collect();
    // Where a held piece may be put besides where it is: the place of
    // each snap point with room left (the kernel snaps it there).
    let snaps: Vec<&Transform> = entities
        .iter()
        .filter_map(|e| {
            let s = e.components.snap_point.as_ref()?;
            let free = s
                .capacity
                .is_none_or(|c| u64::try_from(s.attached.len()).unwrap_or(u64::MAX) < c);
            free.then_some(e.components.transform.as_ref()?)
        })
        .collect();
    for e in entities {
        let id = &e.id;
        let c = &e.components;
        // Another seat's piece: nothing names it.
        if theirs(e) {
            continue;
        }
        let on = |ty, key| Candidate::On {
            ty,
            key,
            id: id.clone(),
        };
        if c.button.is_some_and(|b| b.enabled) {
            out.push(on("button.press", "entityId"));
        }
        if c.die.is_some() {
            out.push(on("die.roll", "entityId"));
        }
        if c.deck.is_some_and(|d| d.enabled) && c.container.is_some() {
            out.push(on("deck.shuffle", "deckId"));
        }
        if c.flippable.is_some() {
            out.push(on("entity.flip", "entityId"));
        }
        if c.counter.is_some() {
            for amount in [1, -1] {
                out.push(Candidate::Add {
                    id: id.clone(),
                    amount,
                });
            }
        }
        match (&e.held_by, c.grabbable) {
            (Some(who), _) if &**who == player => {
                if let Some(t) = c.transform {
                    out.push(Candidate::Drop {
                        id: id.clone(),
                        transform: t,
                    });
                    // (A snap point where the piece is already adds nothing.)
                    for snap in snaps.iter().filter(|s| s.position != t.position) {
                        out.push(Candidate::Drop {
                            id: id.clone(),
                            transform: Transform {
                                position: snap.position,
                                ..t
                            },
                        });
                    }
                }
            }
            // A locked piece is never picked up (entity.grab refuses it
            // before any guard): no candidate.
            (None, Some(g)) if g.enabled && c.lockable != Some(true) => {
                out.push(on("entity.grab", "entityId"));
            }
            _ => {}
        }
        if out.len() >= CANDIDATES_MAX {
            break;
        }
    }
}
