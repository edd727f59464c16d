//! The match config (docs/match.md, The manifest): `game.json`'s `match`
//! object, or a room's override (`run --match FILE`), read into a checked
//! form. Every problem names its JSON path (`match.timing.decisionLimitMs`)
//! so `check` can point at the line.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// Who may see a clock or a balance besides its seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visibility {
    /// Only its own seat (and the referee).
    Private,
    /// Every viewer, spectators included.
    Public,
}

impl Visibility {
    fn name(self) -> &'static str {
        match self {
            Visibility::Private => "private",
            Visibility::Public => "public",
        }
    }
}

/// Which pieces a seat may act on (`match.ownership`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ownership {
    /// Every seat may act on every piece (the game's guards decide).
    #[default]
    None,
    /// A piece tagged with a seat's id belongs to that seat: another seat
    /// may not act on it (unless the piece carries its id too).
    SeatTags,
}

/// Which end of the scores wins (`match.scoring`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scoring {
    /// The highest score wins (the default: most games).
    #[default]
    HighestWins,
    /// The lowest score wins (golf, Hearts).
    LowestWins,
}

impl Scoring {
    /// Its name in a config (`highestWins`, `lowestWins`).
    pub fn name(self) -> &'static str {
        match self {
            Scoring::HighestWins => "highestWins",
            Scoring::LowestWins => "lowestWins",
        }
    }

    /// The scoring a config names, if it names one.
    pub fn from_name(name: &str) -> Option<Scoring> {
        match name {
            "highestWins" => Some(Scoring::HighestWins),
            "lowestWins" => Some(Scoring::LowestWins),
            _ => None,
        }
    }

    /// The scoring a match result (the JSON a room reports) was ranked
    /// by: the one it names, else the highest wins (a result from a game
    /// that declares no scoring names none).
    pub fn of_result(result: &Value) -> Scoring {
        result
            .get("scoring")
            .and_then(Value::as_str)
            .and_then(Scoring::from_name)
            .unwrap_or_default()
    }

    /// The seats with the best score, in the scores' order: one seat wins
    /// alone, several share the best (a draw), none when no seat has a
    /// number. Scores that are not numbers are left out.
    pub fn winners<'a>(
        self,
        scores: impl IntoIterator<Item = (&'a String, &'a Value)>,
    ) -> Vec<String> {
        let numbers: Vec<(&String, &serde_json::Number)> = scores
            .into_iter()
            .filter_map(|(seat, v)| match v {
                Value::Number(n) => Some((seat, n)),
                _ => None,
            })
            .collect();
        let better = |a: &serde_json::Number, b: &serde_json::Number| match self {
            Scoring::HighestWins => number_cmp(a, b).is_gt(),
            Scoring::LowestWins => number_cmp(a, b).is_lt(),
        };
        let Some(best) =
            numbers
                .iter()
                .map(|(_, n)| *n)
                .reduce(|best, n| if better(n, best) { n } else { best })
        else {
            return Vec::new();
        };
        numbers
            .iter()
            .filter(|(_, n)| number_cmp(n, best).is_eq())
            .map(|(seat, _)| (*seat).clone())
            .collect()
    }
}

/// Where a seat stands in a finished match, from its winners
/// ([`Scoring::winners`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Its score is the best, alone.
    Win,
    /// It shares the best score.
    Draw,
    /// Anything else (no score, or not the best).
    Loss,
}

impl Standing {
    /// `seat`'s standing among `winners`.
    pub fn of(seat: &str, winners: &[String]) -> Standing {
        match (winners.iter().any(|w| w == seat), winners.len()) {
            (true, 1) => Standing::Win,
            (true, _) => Standing::Draw,
            (false, _) => Standing::Loss,
        }
    }
}

/// Two JSON numbers in numeric order: integers exactly (even past 2^53),
/// otherwise as doubles (JSON has no NaN).
pub fn number_cmp(a: &serde_json::Number, b: &serde_json::Number) -> std::cmp::Ordering {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x.cmp(&y);
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return x.cmp(&y);
    }
    let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
    x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)
}

/// How a phase closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closure {
    /// When the game says it is ready (`is_ready()`), or at the deadline.
    ReadyOrDeadline,
    /// Only at the deadline.
    Deadline,
}

/// When a resource's balance goes back to its amount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reset {
    /// Never: one allowance for the whole match.
    Match,
    /// At each new phase.
    Phase,
    /// At each new decision of the seat.
    Decision,
}

/// A phase's deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseLimit {
    /// Milliseconds from the phase's start.
    pub ms: i64,
    /// How it closes.
    pub closure: Closure,
}

/// A named per-seat allowance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// The starting (and reset) balance.
    pub amount: i64,
    /// When it resets.
    pub reset: Reset,
    /// Who sees it.
    pub visibility: Visibility,
}

/// What an attempt costs, and from which resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Charge {
    /// The resource.
    pub resource: String,
    /// The cost (≥ 0).
    pub cost: i64,
}

/// The checked match config.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchConfig {
    /// A seat's total acting time (`None`: unlimited).
    pub player_total_ms: Option<i64>,
    /// One decision's limit (`None`: unlimited).
    pub decision_limit_ms: Option<i64>,
    /// Phase deadlines by phase name.
    pub phase_limits: BTreeMap<String, PhaseLimit>,
    /// Who sees the clocks.
    pub clock_visibility: Visibility,
    /// Resources by name.
    pub resources: BTreeMap<String, Resource>,
    /// The charge for every schema-valid attempt.
    pub action: Option<Charge>,
    /// The extra charge for a game-rejected attempt.
    pub invalid_action: Option<Charge>,
    /// Sensing tools by name, with what a call costs.
    pub sensing: BTreeMap<String, Charge>,
    /// Legal action types by phase (`None`: every phase allows every type).
    pub phases: Option<BTreeMap<String, Vec<String>>>,
    /// Flat values merged into the settings at game start.
    pub rules: Map<String, Value>,
    /// Which pieces a seat may act on.
    pub ownership: Ownership,
    /// Which end of the scores wins, when the config declares it (`None`:
    /// the highest, and results name no winners, as before `scoring`).
    pub scoring: Option<Scoring>,
}

/// A problem in a match config: the JSON path and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// Where (`match.timing.decisionLimitMs`).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

type Checked<T> = Result<T, ConfigError>;

fn bad<T>(path: &str, message: impl Into<String>) -> Checked<T> {
    Err(ConfigError {
        path: path.to_owned(),
        message: message.into(),
    })
}

fn object<'a>(v: &'a Value, path: &str) -> Checked<&'a Map<String, Value>> {
    match v {
        Value::Object(m) => Ok(m),
        _ => bad(path, "must be an object"),
    }
}

fn only(m: &Map<String, Value>, keys: &[&str], path: &str) -> Checked<()> {
    for k in m.keys() {
        if !keys.contains(&k.as_str()) {
            return bad(
                &format!("{path}.{k}"),
                format!("unknown key (allowed: {})", keys.join(", ")),
            );
        }
    }
    Ok(())
}

/// The longest a clock, limit or deadline may be: about 31 years.
const MS_MAX: i64 = 1_000_000_000_000;
/// The most a balance or cost may be.
const AMOUNT_MAX: i64 = 1_000_000_000;
/// The most phases, resources or sensing tools a config may name.
const NAMES_MAX: usize = 64;

fn int_in(v: &Value, path: &str, min: i64, max: i64) -> Checked<i64> {
    match v.as_i64() {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => bad(path, format!("must be an integer from {min} to {max}")),
    }
}

fn ms_or_null(m: &Map<String, Value>, key: &str, path: &str) -> Checked<Option<i64>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => int_in(v, &format!("{path}.{key}"), 1, MS_MAX)
            .map(Some)
            .map_err(|e| ConfigError {
                message: format!("{} (or null: unlimited)", e.message),
                ..e
            }),
    }
}

fn visibility(v: Option<&Value>, path: &str) -> Checked<Visibility> {
    match v.and_then(Value::as_str) {
        None if v.is_none() => Ok(Visibility::Private),
        Some("private") => Ok(Visibility::Private),
        Some("public") => Ok(Visibility::Public),
        _ => bad(path, "must be \"private\" or \"public\""),
    }
}

fn name_ok(name: &str, path: &str) -> Checked<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        bad(path, "a name must be 1 to 64 letters, digits, '_' or '-'")
    }
}

fn limited<'a>(m: &'a Map<String, Value>, path: &str) -> Checked<&'a Map<String, Value>> {
    if m.len() > NAMES_MAX {
        return bad(path, format!("at most {NAMES_MAX} names"));
    }
    for k in m.keys() {
        name_ok(k, &format!("{path}.{k}"))?;
    }
    Ok(m)
}

/// The config's sub-objects, each optional (an absent one is empty).
fn section(
    top: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Checked<(Map<String, Value>, String)> {
    let p = format!("{path}.{key}");
    match top.get(key) {
        None | Some(Value::Null) => Ok((Map::new(), p)),
        Some(v) => object(v, &p).map(|m| (m.clone(), p)),
    }
}

fn phase_limits(timing: &Map<String, Value>, tpath: &str) -> Checked<BTreeMap<String, PhaseLimit>> {
    let (limits, lpath) = section(timing, "phaseLimits", tpath)?;
    let mut out = BTreeMap::new();
    for (name, limit) in limited(&limits, &lpath)? {
        let p = format!("{lpath}.{name}");
        let l = object(limit, &p)?;
        only(l, &["ms", "closure"], &p)?;
        let ms = int_in(
            l.get("ms").unwrap_or(&Value::Null),
            &format!("{p}.ms"),
            1,
            MS_MAX,
        )?;
        let closure = match l.get("closure").and_then(Value::as_str) {
            Some("ready_or_deadline") => Closure::ReadyOrDeadline,
            Some("deadline") => Closure::Deadline,
            _ => {
                return bad(
                    &format!("{p}.closure"),
                    "must be \"ready_or_deadline\" or \"deadline\"",
                )
            }
        };
        out.insert(name.clone(), PhaseLimit { ms, closure });
    }
    Ok(out)
}

fn resources(top: &Map<String, Value>, path: &str) -> Checked<BTreeMap<String, Resource>> {
    let (all, rpath) = section(top, "resources", path)?;
    let mut out = BTreeMap::new();
    for (name, r) in limited(&all, &rpath)? {
        let p = format!("{rpath}.{name}");
        let o = object(r, &p)?;
        only(o, &["amount", "reset", "visibility"], &p)?;
        let amount = int_in(
            o.get("amount").unwrap_or(&Value::Null),
            &format!("{p}.amount"),
            0,
            AMOUNT_MAX,
        )?;
        let reset = match o.get("reset").and_then(Value::as_str) {
            Some("match") => Reset::Match,
            Some("phase") => Reset::Phase,
            Some("decision") => Reset::Decision,
            _ => {
                return bad(
                    &format!("{p}.reset"),
                    "must be \"match\", \"phase\" or \"decision\"",
                )
            }
        };
        let visibility = visibility(o.get("visibility"), &format!("{p}.visibility"))?;
        out.insert(
            name.clone(),
            Resource {
                amount,
                reset,
                visibility,
            },
        );
    }
    Ok(out)
}

/// A `{resource, cost}` charge (`None` when absent or null).
fn charge(
    v: Option<&Value>,
    p: &str,
    resources: &BTreeMap<String, Resource>,
) -> Checked<Option<Charge>> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let o = object(v, p)?;
    only(o, &["resource", "cost"], p)?;
    let resource = match o.get("resource").and_then(Value::as_str) {
        Some(r) if resources.contains_key(r) => r.to_owned(),
        _ => {
            return bad(
                &format!("{p}.resource"),
                "must name a resource declared under match.resources",
            )
        }
    };
    let cost = int_in(
        o.get("cost").unwrap_or(&Value::Null),
        &format!("{p}.cost"),
        0,
        AMOUNT_MAX,
    )?;
    Ok(Some(Charge { resource, cost }))
}

fn phases(
    top: &Map<String, Value>,
    path: &str,
    action_types: &[&str],
) -> Checked<Option<BTreeMap<String, Vec<String>>>> {
    let v = match top.get("phases") {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
    let ppath = format!("{path}.phases");
    let mut out = BTreeMap::new();
    for (name, tools) in limited(object(v, &ppath)?, &ppath)? {
        let p = format!("{ppath}.{name}");
        let Some(list) = tools.as_array() else {
            return bad(&p, "must be a list of action types");
        };
        let mut types = Vec::new();
        for (i, t) in list.iter().enumerate() {
            match t.as_str() {
                Some(t) if action_types.contains(&t) => types.push(t.to_owned()),
                _ => {
                    return bad(
                        &format!("{p}[{i}]"),
                        format!(
                            "must be an action type a seat may submit ({})",
                            action_types.join(", ")
                        ),
                    )
                }
            }
        }
        out.insert(name.clone(), types);
    }
    Ok(Some(out))
}

fn ownership(top: &Map<String, Value>, path: &str) -> Checked<Ownership> {
    match top.get("ownership") {
        None | Some(Value::Null) => Ok(Ownership::None),
        Some(Value::String(s)) if s == "none" => Ok(Ownership::None),
        Some(Value::String(s)) if s == "seatTags" => Ok(Ownership::SeatTags),
        Some(_) => bad(
            &format!("{path}.ownership"),
            "must be \"none\" or \"seatTags\"",
        ),
    }
}

fn scoring(top: &Map<String, Value>, path: &str) -> Checked<Option<Scoring>> {
    match top.get("scoring") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_str().and_then(Scoring::from_name) {
            Some(s) => Ok(Some(s)),
            None => bad(
                &format!("{path}.scoring"),
                "must be \"highestWins\" or \"lowestWins\"",
            ),
        },
    }
}

fn rules(top: &Map<String, Value>, path: &str) -> Checked<Map<String, Value>> {
    let (rules, rpath) = section(top, "rules", path)?;
    for (k, v) in &rules {
        if !(v.is_boolean() || v.is_number() || v.is_string()) {
            return bad(
                &format!("{rpath}.{k}"),
                "rules are flat: a boolean, number or string",
            );
        }
    }
    Ok(rules)
}

impl MatchConfig {
    /// Reads and checks a `match` object. `action_types` are the action
    /// types a seat may submit (phases may name only those); `path` is
    /// where the object sits (`match`).
    ///
    /// # Errors
    /// The first problem, with its path.
    pub fn from_json(v: &Value, path: &str, action_types: &[&str]) -> Checked<MatchConfig> {
        let top = object(v, path)?;
        only(
            top,
            &[
                "timing",
                "resources",
                "metering",
                "phases",
                "rules",
                "sensing",
                "ownership",
                "scoring",
            ],
            path,
        )?;
        let (timing, tpath) = section(top, "timing", path)?;
        only(
            &timing,
            &[
                "playerTotalMs",
                "decisionLimitMs",
                "phaseLimits",
                "clockVisibility",
            ],
            &tpath,
        )?;
        let phase_limits = phase_limits(&timing, &tpath)?;
        let resources = resources(top, path)?;
        let (metering, mpath) = section(top, "metering", path)?;
        only(&metering, &["action", "invalidAction"], &mpath)?;
        let action = charge(
            metering.get("action"),
            &format!("{mpath}.action"),
            &resources,
        )?;
        let invalid_action = charge(
            metering.get("invalidAction"),
            &format!("{mpath}.invalidAction"),
            &resources,
        )?;
        let mut sensing = BTreeMap::new();
        let (tools, spath) = section(top, "sensing", path)?;
        for (name, s) in limited(&tools, &spath)? {
            let p = format!("{spath}.{name}");
            match charge(Some(s), &p, &resources)? {
                Some(c) => sensing.insert(name.clone(), c),
                None => return bad(&p, "must be {resource, cost}"),
            };
        }
        let phases = phases(top, path, action_types)?;
        for name in phase_limits.keys() {
            if phases.as_ref().is_some_and(|p| !p.contains_key(name)) {
                return bad(
                    &format!("{tpath}.phaseLimits.{name}"),
                    "names a phase that match.phases does not list",
                );
            }
        }
        Ok(MatchConfig {
            player_total_ms: ms_or_null(&timing, "playerTotalMs", &tpath)?,
            decision_limit_ms: ms_or_null(&timing, "decisionLimitMs", &tpath)?,
            phase_limits,
            clock_visibility: visibility(
                timing.get("clockVisibility"),
                &format!("{tpath}.clockVisibility"),
            )?,
            resources,
            action,
            invalid_action,
            sensing,
            phases,
            rules: rules(top, path)?,
            ownership: ownership(top, path)?,
            scoring: scoring(top, path)?,
        })
    }

    /// The config as JSON, in the manifest's shape (what a record header
    /// keeps and `digipology manifest` prints).
    pub fn to_json(&self) -> Value {
        let charge = |c: &Option<Charge>| match c {
            Some(c) => json!({"resource": c.resource, "cost": c.cost}),
            None => Value::Null,
        };
        let mut out = json!({
            "timing": {
                "playerTotalMs": self.player_total_ms,
                "decisionLimitMs": self.decision_limit_ms,
                "phaseLimits": self.phase_limits.iter().map(|(k, l)| (k.clone(), json!({
                    "ms": l.ms,
                    "closure": match l.closure {
                        Closure::ReadyOrDeadline => "ready_or_deadline",
                        Closure::Deadline => "deadline",
                    },
                }))).collect::<Map<_, _>>(),
                "clockVisibility": self.clock_visibility.name(),
            },
            "resources": self.resources.iter().map(|(k, r)| (k.clone(), json!({
                "amount": r.amount,
                "reset": match r.reset { Reset::Match => "match", Reset::Phase => "phase", Reset::Decision => "decision" },
                "visibility": r.visibility.name(),
            }))).collect::<Map<_, _>>(),
            "metering": {"action": charge(&self.action), "invalidAction": charge(&self.invalid_action)},
            "sensing": self.sensing.iter().map(|(k, c)| (k.clone(), charge(&Some(c.clone())))).collect::<Map<_, _>>(),
            "phases": self.phases,
            "rules": self.rules,
        });
        // Written only when set, so every match without it keeps the
        // manifest and record header it had.
        if let (Ownership::SeatTags, Some(o)) = (self.ownership, out.as_object_mut()) {
            o.insert("ownership".into(), json!("seatTags"));
        }
        if let (Some(s), Some(o)) = (self.scoring, out.as_object_mut()) {
            o.insert("scoring".into(), json!(s.name()));
        }
        out
    }

    /// Which end of the scores wins (the highest unless declared).
    pub fn scoring(&self) -> Scoring {
        self.scoring.unwrap_or_default()
    }

    /// Adds to a match result (`{"status":"match_over","scores":…}`) the
    /// scoring it was ranked by and its `winners`, when the config
    /// declares a scoring; a result without one is left as it was.
    pub fn rank_result(&self, result: &mut Value) {
        let Some(scoring) = self.scoring else {
            return;
        };
        if result.get("status").and_then(Value::as_str) != Some("match_over") {
            return;
        }
        let winners = match result.get("scores").and_then(Value::as_object) {
            Some(scores) => scoring.winners(scores),
            None => Vec::new(),
        };
        if let Some(o) = result.as_object_mut() {
            o.insert("scoring".into(), json!(scoring.name()));
            o.insert("winners".into(), json!(winners));
        }
    }

    /// Whether `seat` may not act on `entity`: with `seatTags`, a piece
    /// tagged with another seat's id and not with `seat`'s is not its.
    pub fn not_yours(
        &self,
        entity: &digipology_kernel::Entity,
        seat: &str,
        seats: &[digipology_kernel::Id],
    ) -> bool {
        // An entity's tags are sorted and unique (`Entity::tags`).
        let tagged = |s: &str| entity.tags.binary_search_by(|t| t.as_str().cmp(s)).is_ok();
        self.ownership == Ownership::SeatTags
            && !tagged(seat)
            && seats.iter().any(|s| **s != *seat && tagged(s))
    }

    /// Whether a seat may use `action_type` in `phase`.
    pub fn phase_allows(&self, phase: Option<&str>, action_type: &str) -> bool {
        match (&self.phases, phase) {
            (None, _) => true,
            // Sensing tools are open to every seat in every phase (seed
            // 004: waiting seats may use them).
            _ if action_type == "match.sense" => true,
            (Some(p), Some(name)) => p
                .get(name)
                .is_some_and(|types| types.iter().any(|t| t == action_type)),
            // Phases are declared but the game names none now: no tool is
            // restricted until it does.
            (Some(_), None) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Checked<MatchConfig> {
        MatchConfig::from_json(&v, "match", &["entity.grab"])
    }

    /// `ownership` is `none` (also when absent) or `seatTags`; anything
    /// else is refused at its path; the manifest's shape names it only
    /// when set, and reads back the same.
    #[test]
    fn ownership_is_none_or_seat_tags() {
        for (v, want) in [
            (json!({}), Ownership::None),
            (json!({"ownership": null}), Ownership::None),
            (json!({"ownership": "none"}), Ownership::None),
            (json!({"ownership": "seatTags"}), Ownership::SeatTags),
        ] {
            let c = parse(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"));
            assert_eq!(c.ownership, want, "{v}");
            let shape = c.to_json();
            assert_eq!(
                shape.get("ownership").is_some(),
                want == Ownership::SeatTags,
                "{shape}"
            );
            let again = parse(shape).expect("the manifest's shape reads back");
            assert_eq!(again.ownership, want);
        }
        for v in [json!({"ownership": "tags"}), json!({"ownership": true})] {
            let e = parse(v.clone())
                .err()
                .unwrap_or_else(|| panic!("{v} is refused"));
            assert_eq!(e.path, "match.ownership", "{v}");
        }
    }

    /// `scoring` is `highestWins` or `lowestWins` (absent: undeclared,
    /// and the manifest's shape leaves it out); anything else is refused
    /// at its path.
    #[test]
    fn scoring_is_declared_or_absent() {
        for (v, want) in [
            (json!({}), None),
            (json!({"scoring": null}), None),
            (
                json!({"scoring": "highestWins"}),
                Some(Scoring::HighestWins),
            ),
            (json!({"scoring": "lowestWins"}), Some(Scoring::LowestWins)),
        ] {
            let c = parse(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"));
            assert_eq!(c.scoring, want, "{v}");
            assert_eq!(c.scoring(), want.unwrap_or(Scoring::HighestWins));
            let shape = c.to_json();
            assert_eq!(shape.get("scoring").is_some(), want.is_some(), "{shape}");
            assert_eq!(parse(shape).expect("reads back").scoring, want);
        }
        for v in [
            json!({"scoring": "lowest"}),
            json!({"scoring": "lowest_wins"}),
            json!({"scoring": -1}),
        ] {
            let e = parse(v.clone())
                .err()
                .unwrap_or_else(|| panic!("{v} is refused"));
            assert_eq!(e.path, "match.scoring", "{v}");
            assert!(e.message.contains("lowestWins"), "{e}");
        }
    }

    /// The best score wins alone, or draws when shared; numbers compare
    /// as numbers (integers exactly), anything else is no score.
    #[test]
    fn winners_follow_the_scoring() {
        let scores: Map<String, Value> = serde_json::from_value(json!({
            "a": 3, "b": 7, "c": 3.0, "d": "9", "e": null
        }))
        .expect("scores");
        assert_eq!(Scoring::HighestWins.winners(&scores), ["b"]);
        assert_eq!(Scoring::LowestWins.winners(&scores), ["a", "c"]);
        let big: Map<String, Value> = serde_json::from_value(
            json!({"a": 9_007_199_254_740_993_i64, "b": 9_007_199_254_740_992_i64}),
        )
        .expect("scores");
        assert_eq!(Scoring::HighestWins.winners(&big), ["a"]);
        assert_eq!(Scoring::LowestWins.winners(&big), ["b"]);
        assert!(Scoring::LowestWins.winners(&Map::new()).is_empty());
        let w = Scoring::LowestWins.winners(&scores);
        assert_eq!(Standing::of("a", &w), Standing::Draw);
        assert_eq!(Standing::of("b", &w), Standing::Loss);
        assert_eq!(Standing::of("a", &["a".to_owned()]), Standing::Win);
        assert_eq!(Standing::of("z", &[]), Standing::Loss);
    }

    /// A declared scoring adds the winners to a match result; without
    /// one, and for an aborted match, the result is left as it was.
    #[test]
    fn a_declared_scoring_names_the_winners() {
        let over = json!({"status": "match_over", "scores": {"a": 3, "b": 7}});
        let mut r = over.clone();
        parse(json!({})).expect("config").rank_result(&mut r);
        assert_eq!(r, over);
        parse(json!({"scoring": "lowestWins"}))
            .expect("config")
            .rank_result(&mut r);
        assert_eq!(r["winners"], json!(["a"]));
        assert_eq!(r["scoring"], "lowestWins");
        assert_eq!(Scoring::of_result(&r), Scoring::LowestWins);
        assert_eq!(Scoring::of_result(&over), Scoring::HighestWins);
        let aborted = json!({"status": "match_aborted", "reason": "x"});
        let mut r = aborted.clone();
        parse(json!({"scoring": "lowestWins"}))
            .expect("config")
            .rank_result(&mut r);
        assert_eq!(r, aborted);
    }
}
