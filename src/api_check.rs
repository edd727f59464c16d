//! `digipology check`'s warnings about the creator API's versions
//! (docs/lua-api.md, API versions): a game that names no `apiVersion`, and
//! the uses of a behaviour one version superseded that `check` can see in
//! a script's text.

use digipology_room::package::Package;

use crate::check::Problem as Warning;

/// At most this many warnings about superseded uses per game (the rest are
/// counted in the last one).
const USES_SHOWN_MAX: usize = 20;

/// One behaviour a version changed, and how a script's line shows a use of
/// it.
struct Change {
    /// The version that changed it.
    since: u64,
    /// The use of the behaviour as the game's version has it, in a game
    /// older than `since` (then the line is worth a look before moving on).
    older: fn(&str) -> bool,
    /// The use of the superseded behaviour, in a game of version `since` or
    /// newer (then the line most likely no longer does what it meant).
    newer: fn(&str) -> bool,
    /// What the warning says for each.
    older_says: &'static str,
    newer_says: &'static str,
}

/// Every creator-visible behaviour kept per version (CHANGELOG.md lists
/// the changes; docs/lua-api.md, API versions, the table).
const CHANGES: &[Change] = &[
    Change {
        since: 2,
        older: |line| line.contains("game.seats()"),
        newer: |line| seats_by_key(line) || seats_in_pairs(line),
        older_says: "game.seats() here is API 1's map {seatId = playerId or false} (it also answers ipairs and #, as API 2's list); from \"apiVersion\": 2 it is a list of {id = seat, player = playerId} in seat order — move when the script reads it as a list",
        newer_says: "game.seats() is a list in seat order since API 2 ({ {id = seat, player = playerId}, … }): indexing it by a seat id, or pairs over it as seat = player, reads nothing — use game.seat(seat) for the player in a seat, ipairs(game.seats()) for all of them",
    },
    Change {
        since: 3,
        older: |line| line.contains("reveal_to(") || line.contains(":peek("),
        newer: |_| false,
        older_says: "a card revealed here shows the seat where it lies in a hand it cannot see into (`shown[i].index`) under API 1 and 2 — with a hand kept sorted, that tells of the other cards; from \"apiVersion\": 3 it shows which card only (docs/observations.md, Positions)",
        newer_says: "",
    },
];

/// `game.seats()[x]` where `x` is not a number: the API 1 map read by key.
fn seats_by_key(line: &str) -> bool {
    line.match_indices("game.seats()").any(|(i, m)| {
        let rest = line[i + m.len()..].trim_start();
        rest.strip_prefix('[').is_some_and(|r| {
            !r.trim_start()
                .starts_with(|c: char| c.is_ascii_digit() || c == '#')
        })
    })
}

/// `pairs(game.seats())` (not `ipairs`): the API 1 map walked as seat =
/// player.
fn seats_in_pairs(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    compact
        .match_indices("pairs(game.seats())")
        .any(|(i, _)| !compact[..i].ends_with('i'))
}

/// The code of a line of Lua without its comment (a `--` outside a string,
/// roughly: quotes are counted, long strings are not followed).
fn code_of(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev = '\0';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q && prev != '\\' => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '-' && prev == '-' => return &line[..i - 1],
            None => {}
        }
        prev = c;
    }
    line
}

/// The warnings for `package`: no `apiVersion` named, and each use of a
/// changed behaviour in its scripts and modules.
pub(crate) fn warnings(package: &Package) -> Vec<Warning> {
    let mut out = Vec::new();
    let Ok(api) = package.api_version() else {
        // A bad apiVersion is a problem the room's load reports.
        return out;
    };
    let scripts = package.scripts().unwrap_or_default();
    let modules = package.modules();
    let mut sources: Vec<(String, String)> =
        scripts.into_iter().map(|s| (s.file, s.source)).collect();
    for (file, source) in modules.into_values() {
        if !sources.iter().any(|(f, _)| *f == file) {
            sources.push((file, source));
        }
    }
    if package.json.get("apiVersion").is_none() && !sources.is_empty() {
        out.push(Warning {
            place: package.manifest.display().to_string(),
            message: format!(
                "game.json names no apiVersion, so the game runs under API 1, the first (docs/lua-api.md, API versions); add \"apiVersion\": {} to write against the newest",
                digipology_kernel::load::API_VERSION_LATEST
            ),
        });
    }
    let mut uses = 0usize;
    for (file, source) in &sources {
        for (n, line) in source.lines().enumerate() {
            let code = code_of(line);
            for change in CHANGES {
                let says = if api < change.since && (change.older)(code) {
                    change.older_says
                } else if api >= change.since && (change.newer)(code) {
                    change.newer_says
                } else {
                    continue;
                };
                uses += 1;
                if uses <= USES_SHOWN_MAX {
                    out.push(Warning {
                        place: format!("{}:{}", package.dir.join(file).display(), n + 1),
                        message: format!("(apiVersion {api}) {says}"),
                    });
                }
            }
        }
    }
    if uses > USES_SHOWN_MAX {
        out.push(Warning {
            place: package.manifest.display().to_string(),
            message: format!(
                "{} more uses of behaviour another API version changed (shown: the first {USES_SHOWN_MAX})",
                uses - USES_SHOWN_MAX
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_read_by_key_or_walked_as_a_map_are_seen() {
        assert!(seats_by_key("if game.seats()[seat] == player then"));
        assert!(seats_by_key("local p = game.seats() [ s ]"));
        assert!(!seats_by_key("local first = game.seats()[1]"));
        assert!(!seats_by_key("local last = game.seats()[#list]"));
        assert!(seats_in_pairs("for seat, p in pairs(game.seats()) do"));
        assert!(seats_in_pairs("for seat, p in pairs( game.seats() ) do"));
        assert!(!seats_in_pairs("for _, s in ipairs(game.seats()) do"));
    }

    #[test]
    fn comments_are_not_code() {
        assert_eq!(code_of("x = 1 -- game.seats()[s]"), "x = 1 ");
        assert_eq!(
            code_of(r#"s = "--" .. game.seats()"#),
            r#"s = "--" .. game.seats()"#
        );
        assert_eq!(code_of("-- all comment"), "");
    }
}
