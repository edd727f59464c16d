//! `digipology check GAME`: validate a package without running anything.

use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

use crate::error::CliError;
use crate::package::Package;

/// One problem (or warning): where, what, and what to do.
pub(crate) struct Problem {
    pub(crate) place: String,
    pub(crate) message: String,
}

/// Checks `game`; prints every problem as `file:line: message` and exits 1
/// when there is any, 0 otherwise.
pub fn check(game: &Path, match_file: Option<&Path>) -> ExitCode {
    let mut warnings = Vec::new();
    let problems = collect(game, match_file, &mut warnings);
    for w in &warnings {
        println!("{}: warning: {}", w.place, w.message);
    }
    if problems.is_empty() {
        println!("ok: {} loads, and every script compiles", game.display());
        return ExitCode::SUCCESS;
    }
    for p in &problems {
        println!("{}: {}", p.place, p.message);
    }
    println!(
        "{} problem{} found",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    ExitCode::from(1)
}

fn collect(game: &Path, match_file: Option<&Path>, warnings: &mut Vec<Problem>) -> Vec<Problem> {
    let package = match Package::load(game) {
        Ok(p) => p,
        Err(e) => return vec![unreadable(game, e)],
    };
    let mut c = Checker {
        text: std::fs::read_to_string(&package.manifest).unwrap_or_default(),
        manifest: package.manifest.display().to_string(),
        package: &package,
        problems: Vec::new(),
        checked: Vec::new(),
        required: Vec::new(),
        match_file: match_file.map(Path::to_path_buf),
    };
    let state = c.manifest_state();
    let list = package
        .json
        .get("scripts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, entry) in list.iter().enumerate() {
        c.script_entry(i, entry, state.as_ref());
    }
    if let Err(CliError::Game { error, .. }) = package.scripts() {
        if !error.path.ends_with(".file") {
            let place = c.at(&error.path);
            c.problem(place, format!("{}: {}", error.path, error.message));
        }
    }
    c.modules(warnings);
    warnings.extend(crate::api_check::warnings(&package));
    let own = c.match_config(match_file);
    // Last, load the room exactly as `run` does (scripts' top-level chunks
    // run in the sandbox, no action is processed), so `check` can never
    // pass a game that `run` refuses.
    if c.problems.is_empty() {
        match crate::package::build_room(&package, 0, (None, None)) {
            Err(e) => {
                let p = load_problem(&package, &c.text, e);
                c.problems.push(p);
            }
            Ok(mut room) => {
                if let Some(config) = own {
                    let _ = room.set_match(config);
                }
                c.match_functions(&room);
            }
        }
    }
    c.problems
}

/// A package that cannot be read at all.
fn unreadable(game: &Path, e: CliError) -> Problem {
    Problem {
        place: match &e {
            CliError::Json {
                path, line, column, ..
            } => format!("{}:{line}:{column}", path.display()),
            CliError::Io { path, .. } => path.display().to_string(),
            _ => game.display().to_string(),
        },
        message: match e {
            CliError::Json { message, .. } => {
                format!("invalid JSON: {message} (fix the syntax at that spot)")
            }
            CliError::Io { message, .. } => message,
            other => other.to_string(),
        },
    }
}

/// The checks of one readable package, and what they found.
struct Checker<'p> {
    package: &'p Package,
    /// The manifest's text (to find a path's line) and its name.
    text: String,
    manifest: String,
    problems: Vec<Problem>,
    /// Script files checked, and the module names they require.
    checked: Vec<String>,
    required: Vec<String>,
    /// The room's own match config (`--match`), when checked.
    match_file: Option<std::path::PathBuf>,
}

impl Checker<'_> {
    fn problem(&mut self, place: String, message: String) {
        self.problems.push(Problem { place, message });
    }

    /// `game.json:LINE` of a JSON path.
    fn at(&self, path: &str) -> String {
        format!(
            "{}:{}",
            self.manifest,
            locate(&self.text, path).unwrap_or(1)
        )
    }

    /// `game.json:LINE` of a string's first appearance.
    fn at_str(&self, s: &str) -> String {
        format!(
            "{}:{}",
            self.manifest,
            locate_str(&self.text, s).unwrap_or(1)
        )
    }

    /// `file:LINE` of a JSON path in the match config: the room's own file
    /// (`--match`) when there is one, else game.json.
    fn at_match(&self, path: &str) -> String {
        match &self.match_file {
            Some(f) => {
                let text = std::fs::read_to_string(f).unwrap_or_default();
                format!("{}:{}", f.display(), locate(&text, path).unwrap_or(1))
            }
            None => self.at(path),
        }
    }

    /// The `match` config (docs/match.md), each problem at its line —
    /// game.json's, or a room's own file (`--match`), which is returned
    /// for the checks of the scripts against it.
    fn match_config(
        &mut self,
        file: Option<&Path>,
    ) -> Option<digipology_room::matches::MatchConfig> {
        let Some(file) = file else {
            if let Err(CliError::Game { error, .. }) = self.package.match_config() {
                let place = self.at(&error.path);
                self.problem(place, format!("{}: {}", error.path, error.message));
            }
            return None;
        };
        match crate::package::match_config_file(file) {
            Ok(config) => Some(config),
            Err(CliError::Game { path, error }) => {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let line = locate(&text, &error.path).unwrap_or(1);
                self.problem(
                    format!("{}:{line}", path.display()),
                    format!("{}: {}", error.path, error.message),
                );
                None
            }
            Err(e) => {
                self.problem(file.display().to_string(), e.to_string());
                None
            }
        }
    }

    /// What a match needs from the scripts: seed 004 requires a game with
    /// player clocks to resolve their exhaustion (`on_host_event`).
    fn match_functions(&mut self, room: &crate::room::Room) {
        let Some(layer) = room.match_layer() else {
            return;
        };
        for name in layer.config.sensing.keys() {
            let function = format!("sense_{name}");
            if !room.scripts().is_some_and(|h| h.defines(&function)) {
                let place = self.at_match(&format!("match.sensing.{name}"));
                self.problem(
                    place,
                    format!("match.sensing.{name}: no global script defines {function}(seat, input), which answers this sensing tool"),
                );
            }
        }
        let defines = |f: &str| room.scripts().is_some_and(|h| h.defines(f));
        if layer.config.phases.is_some() && !defines("current_phase") {
            let place = self.at_match("match.phases");
            self.problem(
                place,
                "match.phases is set but no global script defines current_phase(): with no phase named, every tool is legal (docs/match.md)".into(),
            );
        }
        if defines("is_terminal") && !defines("score") {
            self.problem(
                self.manifest.clone(),
                "a script defines is_terminal() but no score(): the match would end with empty scores (define score(), docs/match.md)".into(),
            );
        }
        let handles = defines("on_host_event");
        if layer.config.player_total_ms.is_some() && !handles {
            let place = self.at_match("match.timing.playerTotalMs");
            self.problem(
                place,
                "match.timing.playerTotalMs is set but no global script defines on_host_event(event): the game must resolve player_time_exhausted (docs/match.md, Host events)".into(),
            );
        }
    }

    /// The starting state (when the manifest loads) and the limits.
    fn manifest_state(&mut self) -> Option<digipology_kernel::State> {
        let state = match self.package.initial_state(0) {
            Ok(s) => Some(s),
            Err(CliError::Game { error, .. }) => {
                let place = self.at(&error.path);
                self.problem(
                    place,
                    format!(
                        "{}: {} (see docs/formats.md, game.json)",
                        error.path, error.message
                    ),
                );
                None
            }
            Err(e) => {
                let place = self.manifest.clone();
                self.problem(place, e.to_string());
                None
            }
        };
        if let Err(CliError::Game { error, .. }) = self.package.limits() {
            let place = self.at(&error.path);
            self.problem(place, format!("{}: {}", error.path, error.message));
        }
        state
    }

    /// `scripts[i]`: a file inside the game folder that exists and
    /// compiles, and bindings to entities the game defines.
    fn script_entry(&mut self, i: usize, entry: &Value, state: Option<&digipology_kernel::State>) {
        let path = format!("scripts[{i}]");
        let Some(file) = entry.get("file").and_then(Value::as_str) else {
            let place = self.at(&path);
            self.problem(
                place,
                format!(
                    "{path}.file is missing: give the script's path, like \"scripts/main.lua\""
                ),
            );
            return;
        };
        // A path leading outside the game folder is never opened.
        let outside = Path::new(file).components().any(|c| {
            !matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        if outside {
            let place = self.at_str(file);
            self.problem(place, format!("{path}.file: \"{file}\" must be a path inside the game folder, like \"scripts/main.lua\" (no absolute path, no ..)"));
            return;
        }
        self.script_file(&path, file);
        if let (Some(state), Some(bindings)) =
            (state, entry.get("bindings").and_then(Value::as_array))
        {
            for b in bindings {
                if let Some(e) = b.get("entity").and_then(Value::as_str) {
                    if state.entity(e).is_none() {
                        let place = self.at_str(e);
                        self.problem(place, format!("{path}: a binding names entity \"{e}\", which the game does not define"));
                    }
                }
            }
        }
    }

    /// One script file: it exists and compiles; its requires are noted.
    fn script_file(&mut self, path: &str, file: &str) {
        let full = self.package.dir.join(file);
        match crate::package::read_script(&full) {
            Err(_) => {
                let place = self.at_str(file);
                self.problem(
                    place,
                    format!(
                        "{path}.file: {} does not exist (create it, or fix the path; it is relative to the game folder)",
                        full.display()
                    ),
                );
            }
            Ok(source) => {
                self.checked.push(file.trim_start_matches("./").to_owned());
                self.required.extend(required_names(&source));
                if let Err(digipology_lua::LoadError::Syntax { line, message, .. }) =
                    digipology_lua::check_syntax(file, &source)
                {
                    let place = at_line(&full.display().to_string(), line);
                    self.problem(place, format!("syntax error: {message}"));
                }
            }
        }
    }

    /// Every module a script requires by name (and the modules those
    /// require): a broken helper file fails the game as surely as a broken
    /// main script. Other files under scripts/ are only warned about — no
    /// script names them, so `run` does not load them.
    fn modules(&mut self, warnings: &mut Vec<Problem>) {
        let modules = self.package.modules();
        let mut reached = std::collections::BTreeSet::new();
        while let Some(name) = self.required.pop() {
            if reached.insert(name.clone()) {
                if let Some((_, source)) = modules.get(&name) {
                    self.required.extend(required_names(source));
                }
            }
        }
        for (name, (file, source)) in &modules {
            if self.checked.contains(file) {
                continue;
            }
            if let Err(digipology_lua::LoadError::Syntax { line, message, .. }) =
                digipology_lua::check_syntax(file, source)
            {
                let place = at_line(&self.package.dir.join(file).display().to_string(), line);
                if reached.contains(name) {
                    self.problem(
                        place,
                        format!("syntax error (module \"{name}\", loaded by require): {message}"),
                    );
                } else {
                    warnings.push(Problem {
                        place,
                        message: format!("syntax error in a module no script requires by name (\"{name}\"; it fails when one does): {message}"),
                    });
                }
            }
        }
    }
}

/// A room that does not build, as a problem with the best place known.
fn load_problem(package: &Package, text: &str, e: CliError) -> Problem {
    let manifest = package.manifest.display().to_string();
    match e {
        CliError::Script { dir, error } => {
            let (place, message) = match &error {
                digipology_lua::LoadError::Syntax {
                    file,
                    line,
                    message,
                } => (
                    at_line(&dir.join(file).display().to_string(), *line),
                    format!("syntax error: {message}"),
                ),
                digipology_lua::LoadError::Runtime { file, message } => {
                    let place = dir.join(file).display().to_string();
                    (
                        match digipology_lua::line_of(message) {
                            Some(line) => format!("{place}:{line}"),
                            None => place,
                        },
                        format!("error while loading: {message}"),
                    )
                }
                other => (dir.display().to_string(), other.to_string()),
            };
            Problem { place, message }
        }
        CliError::Game { error, .. } => Problem {
            place: format!("{manifest}:{}", locate(text, &error.path).unwrap_or(1)),
            message: format!("{}: {}", error.path, error.message),
        },
        other => Problem {
            place: manifest,
            message: other.to_string(),
        },
    }
}

/// Module names a Lua source requires literally: `require("a.b")`,
/// `require "a.b"`, `require 'a.b'`.
fn required_names(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = source;
    while let Some(i) = rest.find("require") {
        rest = &rest[i + "require".len()..];
        let after = rest.trim_start();
        let after = after.strip_prefix('(').map_or(after, str::trim_start);
        let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let body = &after[1..];
        if let Some(end) = body.find(quote) {
            out.push(body[..end].to_owned());
        }
    }
    out
}

/// `path:line`, or `path` when the line is unknown (0).
fn at_line(path: &str, line: u32) -> String {
    if line == 0 {
        path.to_owned()
    } else {
        format!("{path}:{line}")
    }
}

fn line_at(text: &str, pos: usize) -> usize {
    text[..pos].bytes().filter(|b| *b == b'\n').count() + 1
}

/// The line of the first `"s"` string literal in `text`.
fn locate_str(text: &str, s: &str) -> Option<usize> {
    text.find(&format!("\"{s}\"")).map(|p| line_at(text, p))
}

/// The line a JSON path (`entities["d"].components.dice`, `scripts[1].file`)
/// most likely points at: each named part is searched for after the
/// previous one. An id (`["d"]`) used as a value (`"id": "d"`) moves the
/// search back to the start of the object holding it, since keys may come
/// in any order.
pub fn locate(text: &str, path: &str) -> Option<usize> {
    let mut pos = 0usize;
    let mut found = None;
    for part in path.split(['.', '[', ']']).filter(|p| !p.is_empty()) {
        if part.chars().all(|c| c.is_ascii_digit()) {
            // An index into the array after the key just found (when it
            // is one): its element's line.
            if let Some(at) = part
                .parse()
                .ok()
                .and_then(|n| found.and(element(text, pos, n)))
            {
                pos = at;
                found = Some(line_at(text, at));
            }
            continue;
        }
        let is_id = part.starts_with('"');
        let name = part.trim_matches('"');
        let Some(p) = text[pos..].find(&format!("\"{name}\"")).map(|p| p + pos) else {
            continue;
        };
        let after = p + name.len() + 2;
        let is_key = text[after..].trim_start().starts_with(':');
        pos = if is_id && !is_key {
            enclosing_brace(text, p)
        } else {
            after
        };
        found = Some(line_at(text, p));
    }
    found
}

/// The position of the `{` that opens the object containing `pos`.
fn enclosing_brace(text: &str, pos: usize) -> usize {
    let mut depth = 0i32;
    for (i, b) in text[..pos].bytes().enumerate().rev() {
        match b {
            b'}' => depth += 1,
            b'{' if depth == 0 => return i,
            b'{' => depth -= 1,
            _ => {}
        }
    }
    0
}

/// Where element `n` of the array right after `pos` starts (`pos` just past
/// a key: `: [a, b, …]`), when there is one.
fn element(text: &str, pos: usize, n: usize) -> Option<usize> {
    let b = text.as_bytes();
    let ws = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let mut i = ws(pos);
    if b.get(i) == Some(&b':') {
        i = ws(i + 1);
    }
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i = ws(i + 1);
    for _ in 0..n {
        i = ws(skip_value(b, i)?);
        if b.get(i) != Some(&b',') {
            return None;
        }
        i = ws(i + 1);
    }
    (*b.get(i)? != b']').then_some(i)
}

/// The position just past the JSON value starting at `start`.
fn skip_value(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    let mut depth = 0usize;
    loop {
        let c = *b.get(i)?;
        match c {
            b'"' => {
                i += 1;
                loop {
                    match *b.get(i)? {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                i += 1;
            }
            b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b']' | b'}' => {
                if depth == 0 {
                    return Some(i);
                }
                depth -= 1;
                i += 1;
            }
            b',' if depth == 0 => return Some(i),
            _ => i += 1,
        }
        if depth == 0 && matches!(c, b'"' | b']' | b'}') {
            return Some(i);
        }
    }
}

#[cfg(test)]
mod locating {
    use super::locate;

    /// An index names its element's line, past strings holding brackets,
    /// commas and escaped quotes, and past nested values; an index out of
    /// range, or after a key that holds no array, keeps the key's line.
    #[test]
    fn an_index_points_at_its_element() {
        let text = "{\"a\": [\n  \"x,]\\\"\",\n  {\"b\": [1, \"}\"]},\n  [2, [3]],\n  4\n],\n\"c\": {\"d\": 1}}";
        assert_eq!(locate(text, "a"), Some(1));
        assert_eq!(locate(text, "a[0]"), Some(2));
        assert_eq!(locate(text, "a[1]"), Some(3));
        assert_eq!(locate(text, "a[1].b"), Some(3));
        assert_eq!(locate(text, "a[2]"), Some(4));
        assert_eq!(locate(text, "a[3]"), Some(5));
        assert_eq!(locate(text, "a[4]"), Some(1));
        assert_eq!(locate(text, "c[0]"), Some(7));
    }
}
