//! Dispatch: the kernel's script-host trait for the Lua VM. Guards ask every
//! bound `can_*` function (read-only); events go to the bound `on_<event>`
//! handlers — global bindings always, entity bindings when the event names
//! their entity — and then to stored callbacks (`callbacks.rs`).

use std::rc::Rc;

use digipology_kernel::event::Field;
use digipology_kernel::{
    Event, GuardRequest, ScriptCtx, ScriptErrorKind, ScriptFailure, ScriptHost, State, Value,
    Verdict,
};
use mlua::{Function, MultiValue, Value as LuaValue};

use crate::access::{handle_of, Access};
use crate::convert::{number, to_lua, to_value_with, ANSWER_VALUES_MAX};
use crate::errors::truncated;
use crate::host::{
    Answer, Binding, HandlerList, LuaHost, MatchAnswers, PhaseAnswer, Ret, StepMemo,
};

impl LuaHost {
    /// A guard's player-name and transform arguments as Lua values.
    fn guard_args(
        &self,
        state: &State,
        request: &GuardRequest<'_>,
    ) -> mlua::Result<(LuaValue, TransformArgs)> {
        let player_name = match state
            .players
            .get(request.player_id)
            .and_then(|p| p.name.as_deref())
        {
            Some(n) => self.sid(n)?,
            None => LuaValue::Nil,
        };
        Ok((player_name, transform_args(request.transform)))
    }

    /// What one guard's answer means: `None` to ask the next guard, or the
    /// verdict that stops the action.
    fn verdict(
        &self,
        b: &Binding,
        name: &str,
        answer: Result<Ret, crate::errors::Failed>,
    ) -> Option<Verdict> {
        match answer {
            // A mutation the guard caught with pcall still fails it.
            Ok(_)
                if matches!(
                    self.shared.fail_kind.get(),
                    Some(ScriptErrorKind::GuardMutation)
                ) =>
            {
                Some(Verdict::Fail(self.failure(
                    b,
                    name,
                    (
                        "guards are read-only: this guard tried to change the game (and caught the error)".into(),
                        None,
                        ScriptErrorKind::GuardMutation,
                    ),
                )))
            }
            Ok((LuaValue::Boolean(true), _)) => None,
            Ok((_, reason)) => {
                // A reason is shown to the player: at most REASON_BYTES_MAX
                // bytes of it are kept.
                let reason = match reason {
                    LuaValue::String(s) => Some(truncated(&s.as_bytes())),
                    _ => None,
                };
                Some(Verdict::Deny { reason })
            }
            Err(e) => Some(Verdict::Fail(self.failure(b, name, e))),
        }
    }

    pub(crate) fn handlers_for(&mut self, event_type: &'static str) -> Rc<HandlerList> {
        if let Some(list) = self.handlers.get(event_type) {
            return list.clone();
        }
        let name: &'static str =
            Box::leak(digipology_kernel::handler_name(event_type).into_boxed_str());
        let mut names = vec![name];
        if event_type == "game.started" {
            names.insert(0, "on_start");
        }
        if event_type == "match.host_event" {
            names = vec!["on_host_event"];
        }
        let mut list = Vec::new();
        for (i, b) in self.bindings.iter().enumerate() {
            for n in &names {
                if let Ok(LuaValue::Function(f)) = b.defs.raw_get::<LuaValue>(*n) {
                    list.push((i, f, *n));
                }
            }
        }
        let list = Rc::new(list);
        self.handlers.insert(event_type, list.clone());
        list
    }

    /// A Lua string for a short name or id, created once and reused (every
    /// fresh string costs a protected call once a memory limit is set).
    pub(crate) fn sid(&self, s: &str) -> mlua::Result<LuaValue> {
        self.shared.string(&self.lua, s).map(LuaValue::String)
    }

    /// (type, seq, actionId or nil, key, value, …) for `P.handle`.
    pub(crate) fn event_args(&self, event: &Event) -> mlua::Result<Vec<LuaValue>> {
        let mut args = Vec::with_capacity(12);
        args.push(self.sid(event.type_name())?);
        args.push(LuaValue::Integer(
            i64::try_from(event.seq).unwrap_or(i64::MAX),
        ));
        args.push(match &event.action_id {
            digipology_kernel::event::ActionId::Auto(_) => LuaValue::Nil,
            digipology_kernel::event::ActionId::Given(id) => {
                LuaValue::String(self.lua.create_string(&**id)?)
            }
        });
        let mut failed = None;
        event.kind.fields(&mut |k, v| {
            if failed.is_some() {
                return;
            }
            let value = match v {
                Field::Null => Ok(LuaValue::Nil),
                Field::Bool(b) => Ok(LuaValue::Boolean(b)),
                Field::Num(n) => Ok(number(n)),
                Field::Str(s) => self.sid(s),
                other => to_lua(&self.lua, &other.to_value()),
            };
            match (self.sid(k), value) {
                (Ok(k), Ok(v)) => {
                    args.push(k);
                    args.push(v);
                }
                (Err(e), _) | (_, Err(e)) => failed = Some(e),
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(args)
    }

    fn guards_for(&mut self, name: &'static str) -> Rc<Vec<(usize, Function)>> {
        if let Some(list) = self.guards.get(name) {
            return list.clone();
        }
        let list: Vec<(usize, Function)> = self
            .bindings
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match b.defs.raw_get::<LuaValue>(name) {
                Ok(LuaValue::Function(f)) => Some((i, f)),
                _ => None,
            })
            .collect();
        let list = Rc::new(list);
        self.guards.insert(name, list.clone());
        list
    }
}

/// Calls `P.handle(f, type, seq, actionId, n, tables, k1, v1, …)` (`tables`:
/// whether a value is a table); events with up to four data fields go
/// over as a fixed tuple (no argument list to allocate), others to
/// `P.handle_many` (`calls`: the two).
fn invoke_handler(
    calls: (&Function, &Function),
    f: &Function,
    args: Vec<LuaValue>,
) -> mlua::Result<Answer> {
    let n = i64::try_from(args.len().saturating_sub(3)).unwrap_or(i64::MAX);
    let tables = args.iter().skip(3).any(LuaValue::is_table);
    if n <= 8 {
        let mut it = args.into_iter();
        let mut next = || it.next().unwrap_or(LuaValue::Nil);
        let (t, seq, aid) = (next(), next(), next());
        let fields = [
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
        ];
        let [k1, v1, k2, v2, k3, v3, k4, v4] = fields;
        return calls
            .0
            .call::<Answer>((f, t, seq, aid, n, tables, k1, v1, k2, v2, k3, v3, k4, v4));
    }
    let mut it = args.into_iter();
    let mut all = MultiValue::new();
    all.push_back(LuaValue::Function(f.clone()));
    for _ in 0..3 {
        all.push_back(it.next().unwrap_or(LuaValue::Nil));
    }
    all.push_back(LuaValue::Integer(n));
    all.push_back(LuaValue::Boolean(tables));
    all.extend(it);
    calls.1.call::<Answer>(all)
}

impl ScriptHost for LuaHost {
    fn set_dry_run(&mut self, on: bool) {
        self.shared.read_only(on);
    }

    fn begin_transaction(&mut self, seq: u64) {
        self.seq = seq;
        self.reset_budget();
        *self.shared.doom.borrow_mut() = None;
        self.shared.storage_values.borrow_mut().clear();
        self.shared.ids.set(0);
    }

    fn guard(&mut self, state: &State, request: &GuardRequest<'_>) -> Verdict {
        let name = request.kind.function_name();
        let guards = self.guards_for(name);
        if guards.is_empty() {
            return Verdict::Allow;
        }
        let (player_name, transform) = match self.guard_args(state, request) {
            Ok(args) => args,
            Err(e) => {
                let b = &self.bindings[guards[0].0];
                return Verdict::Fail(self.failure(
                    b,
                    name,
                    (e.to_string(), None, ScriptErrorKind::Runtime),
                ));
            }
        };
        let key = handle_of(request.entity_key);
        for (i, f) in guards.iter() {
            let b = &self.bindings[*i];
            if b.entity.as_deref().is_some_and(|e| e != request.entity_id) {
                continue;
            }
            let call = &self.guard_call;
            // The guard entry answers the guard's own results (an error
            // comes back as `Err`): accepted as `true, answer, reason`.
            let invoke = || {
                let (player, entity) = (self.sid(request.player_id)?, self.sid(request.entity_id)?);
                // Without a transform the ten numbers are nil: left out.
                let answer = match &transform {
                    Some([px, py, pz, rx, ry, rz, rw, sx, sy, sz]) => call.call::<Ret>((
                        f,
                        player,
                        &player_name,
                        entity,
                        key,
                        (px, py, pz, rx, ry, rz, rw, sx, sy, sz),
                    )),
                    None => call.call::<Ret>((f, player, &player_name, entity, key)),
                };
                answer.map(|(answer, reason)| (LuaValue::Boolean(true), answer, reason))
            };
            let answer = self.call(invoke, Access::Guard(state), &b.script_id, &b.binding_id);
            if let Some(stop) = self.verdict(b, name, answer) {
                return stop;
            }
        }
        Verdict::Allow
    }

    fn guard_action(
        &mut self,
        state: &State,
        player_id: &str,
        action: &digipology_kernel::Action,
    ) -> Verdict {
        const NAME: &str = "can_act";
        let guards = self.guards_for(NAME);
        if guards.is_empty() {
            return Verdict::Allow;
        }
        let player_name = state.players.get(player_id).and_then(|p| p.name.as_deref());
        let payload = Value::from_json(&action.payload.to_json()).unwrap_or(Value::Null);
        for (i, f) in guards.iter() {
            let b = &self.bindings[*i];
            if b.entity.is_some() {
                continue;
            }
            let call = &self.act_call;
            let invoke = || {
                let name = match player_name {
                    Some(n) => self.sid(n)?,
                    None => LuaValue::Nil,
                };
                call.call::<Ret>((
                    f,
                    self.sid(player_id)?,
                    name,
                    self.sid(action.action_type.as_str())?,
                    to_lua(&self.lua, &payload)?,
                ))
                .map(|(answer, reason)| (LuaValue::Boolean(true), answer, reason))
            };
            let answer = self.call(invoke, Access::Guard(state), &b.script_id, &b.binding_id);
            if let Some(stop) = self.verdict(b, NAME, answer) {
                return stop;
            }
        }
        Verdict::Allow
    }

    fn on_event(
        &mut self,
        ctx: &mut ScriptCtx<'_, '_>,
        event: &Event,
    ) -> Result<(), ScriptFailure> {
        self.on_event_handlers(ctx, event)?;
        self.stored_callback(ctx, event)
    }

    fn wants_events(&self) -> bool {
        self.has_handlers
    }

    fn wants_event(&mut self, event_type: &'static str) -> bool {
        // Prompt answers and timer fires may have a stored callback; a
        // cancel removes one.
        matches!(
            event_type,
            "prompt.responded" | "timer.fired" | "prompt.canceled" | "timer.canceled"
        ) || !self.handlers_for(event_type).is_empty()
    }
}

impl LuaHost {
    /// The game's own view for a seat (`observe(seat)`) or for spectators
    /// (`public_view()`, `seat` `None`) (docs/observations.md, A game's
    /// own view): [`LuaHost::query`].
    ///
    /// # Errors
    /// As [`LuaHost::query`].
    pub fn view(
        &mut self,
        state: &State,
        seat: Option<&str>,
    ) -> Option<Result<Value, ScriptFailure>> {
        match seat {
            Some(s) => self.query(state, "observe", &[Value::from(s)]),
            None => self.query(state, "public_view", &[]),
        }
    }

    /// Whether a global binding defines function `name` (the game module's
    /// optional functions, docs/match.md).
    pub fn defines(&self, name: &str) -> bool {
        self.global_function(name).is_some()
    }

    fn global_function(&self, name: &str) -> Option<(usize, Function)> {
        if let Some(found) = self.globals.borrow().get(name) {
            return found.clone();
        }
        let found = self.bindings.iter().enumerate().find_map(|(i, b)| {
            match (&b.entity, b.defs.raw_get::<LuaValue>(name)) {
                (None, Ok(LuaValue::Function(f))) => Some((i, f)),
                _ => None,
            }
        });
        self.globals
            .borrow_mut()
            .insert(name.to_owned(), found.clone());
        found
    }

    /// The match layer's questions after an action in one call into Lua
    /// (docs/match.md): `current_phase()` (compared with `last_phase`),
    /// `is_ready()` when `ready`, `is_terminal()` when `terminal`, and
    /// `participation(seat)` for each of `seats` (the game's seats: fixed
    /// for a host). `None` when any of them failed, tried to change the
    /// game, or answered a participation that is not one of the three
    /// names: the caller then asks one by one ([`LuaHost::query`]), to
    /// report which.
    pub fn match_step(
        &mut self,
        state: &State,
        (ready, terminal): (bool, bool),
        last_phase: Option<&str>,
        seats: &[String],
    ) -> Option<MatchAnswers> {
        let stale = self
            .stepper
            .borrow()
            .as_ref()
            .is_none_or(|s| s.seats != seats);
        if stale {
            *self.step_memo.borrow_mut() = None;
            self.build_stepper(seats)?;
        }
        let (ready_asked, terminal_asked) = (ready, terminal);
        if let Some(m) = self.step_memo.borrow().as_ref() {
            if m.stamp == state.storage_stamp()
                && m.asked == (ready, terminal)
                && m.last_phase.as_deref() == last_phase
            {
                return Some(m.answers.clone());
            }
        }
        let built = self.stepper.borrow();
        let step = built.as_ref()?;
        if step.index == usize::MAX {
            return Some(MatchAnswers::default());
        }
        let natives = self.shared.natives.get();
        self.reset_budget();
        let b = &self.bindings[step.index];
        let last = match last_phase {
            Some(p) => self.sid(p).ok()?,
            None => LuaValue::Nil,
        };
        let results = self.slot_call(
            || step.call.call::<MultiValue>((ready, terminal, last)),
            state,
            b,
        )?;
        let mut it = results.into_iter();
        if !matches!(it.next(), Some(LuaValue::Boolean(true))) {
            return None;
        }
        let phase = match it.next() {
            _ if !step.defined[0] => None,
            Some(LuaValue::Boolean(true)) => Some(PhaseAnswer::Unchanged),
            Some(LuaValue::String(s)) => Some(PhaseAnswer::Named(s.to_str().ok()?.to_string())),
            _ => Some(PhaseAnswer::None),
        };
        let flag = |v: Option<LuaValue>| matches!(v, Some(LuaValue::Boolean(true)));
        let ready = flag(it.next()) && ready && step.defined[1];
        let terminal = flag(it.next()) && terminal && step.defined[2];
        let participation = if step.defined[3] {
            let mut out = Vec::with_capacity(seats.len());
            for _ in seats {
                out.push(match it.next() {
                    Some(LuaValue::Integer(1)) => "acting",
                    Some(LuaValue::Integer(2)) => "waiting",
                    Some(LuaValue::Integer(3)) => "finished",
                    _ => return None,
                });
            }
            Some(out)
        } else {
            None
        };
        let answers = MatchAnswers {
            phase,
            ready: step.defined[1].then_some(ready),
            terminal: step.defined[2].then_some(terminal),
            participation,
        };
        // Functions that read nothing but storage (no other native, no
        // print) answer the same while storage is the same: the next step
        // with the same storage stamp and questions reuses these answers.
        // (Match functions are pure: docs/match.md.)
        *self.step_memo.borrow_mut() = (self.shared.natives.get() == natives).then(|| StepMemo {
            stamp: state.storage_stamp(),
            asked: (ready_asked, terminal_asked),
            last_phase: last_phase.map(str::to_owned),
            answers: answers.clone(),
        });
        Some(answers)
    }

    /// Builds the match step closure around the game's functions and its
    /// seats, noting which functions it defines and the binding of the
    /// first.
    fn build_stepper(&self, seats: &[String]) -> Option<()> {
        let names = ["current_phase", "is_ready", "is_terminal", "participation"];
        let found: Vec<Option<(usize, Function)>> =
            names.iter().map(|n| self.global_function(n)).collect();
        let defined = [0, 1, 2, 3].map(|i| found[i].is_some());
        let index = found.iter().flatten().map(|(i, _)| *i).next();
        let mut args: Vec<LuaValue> = found
            .into_iter()
            .map(|f| f.map_or(LuaValue::Nil, |(_, f)| LuaValue::Function(f)))
            .collect();
        let list = self
            .lua
            .create_sequence_from(seats.iter().map(String::as_str))
            .ok()?;
        args.push(LuaValue::Table(list));
        let call = self
            .match_stepper
            .call::<Function>(MultiValue::from_iter(args))
            .ok()?;
        *self.stepper.borrow_mut() = Some(crate::host::Stepper {
            call,
            defined,
            index: index.unwrap_or(usize::MAX),
            seats: seats.to_vec(),
        });
        Some(())
    }

    /// Runs a read-only call into Lua (the guard access, the budget
    /// counted); `None` when it failed or tried to change the game.
    fn slot_call(
        &self,
        invoke: impl FnOnce() -> mlua::Result<MultiValue>,
        state: &State,
        b: &Binding,
    ) -> Option<MultiValue> {
        let mut out = None;
        let wrapped = || {
            invoke().map(|m| {
                out = Some(m);
                (LuaValue::Boolean(true), LuaValue::Nil, LuaValue::Nil)
            })
        };
        self.next_read_only.set(true);
        let answer = self.call(wrapped, Access::Guard(state), &b.script_id, &b.binding_id);
        let mutated = matches!(
            self.shared.fail_kind.get(),
            Some(ScriptErrorKind::GuardMutation)
        );
        match answer {
            Ok(_) if !mutated => out,
            _ => None,
        }
    }

    /// Asks the game a read-only question: calls function `name` of the
    /// first global binding that defines it with `args`, read-only under
    /// the instruction budget; its first result as a canonical value
    /// (`nil` is null). `None` when no global binding defines it.
    ///
    /// # Errors
    /// The function failed, tried to change the game, or answered something
    /// that is not a canonical value.
    pub fn query(
        &mut self,
        state: &State,
        name: &str,
        args: &[Value],
    ) -> Option<Result<Value, ScriptFailure>> {
        self.query_with(state, name, args, None)
    }

    /// A sensing tool's answer (docs/match.md, Sensing tools):
    /// [`LuaHost::query`] of `sense_<name>(seat, input)`, whose randomness
    /// (`math.random`, `random`) comes from `rng` — the match's own
    /// sensing stream, never the game's.
    ///
    /// # Errors
    /// As [`LuaHost::query`].
    pub fn sense(
        &mut self,
        state: &State,
        name: &str,
        seat: &str,
        input: &Value,
        rng: &mut digipology_kernel::rng::Rng,
    ) -> Option<Result<Value, ScriptFailure>> {
        let function = format!("sense_{name}");
        self.query_with(
            state,
            &function,
            &[Value::from(seat), input.clone()],
            Some(rng),
        )
    }

    fn query_with(
        &mut self,
        state: &State,
        name: &str,
        args: &[Value],
        rng: Option<&mut digipology_kernel::rng::Rng>,
    ) -> Option<Result<Value, ScriptFailure>> {
        let (index, f) = self.global_function(name)?;
        self.reset_budget();
        let b = &self.bindings[index];
        let fail = |message: String, kind| self.failure(b, name, (message, None, kind));
        let mut all = MultiValue::new();
        all.push_back(LuaValue::Function(f));
        for a in args {
            match to_lua(&self.lua, a) {
                Ok(v) => all.push_back(v),
                Err(e) => return Some(Err(fail(e.to_string(), ScriptErrorKind::Runtime))),
            }
        }
        let call = &self.query_call;
        let invoke = || call.call::<crate::host::Answer>(all);
        let access = match rng {
            Some(r) => Access::Sense(state, r),
            None => Access::Guard(state),
        };
        self.next_read_only.set(true);
        let answer = self.call(invoke, access, &b.script_id, &b.binding_id);
        Some(match answer {
            Ok(_)
                if matches!(
                    self.shared.fail_kind.get(),
                    Some(ScriptErrorKind::GuardMutation)
                ) =>
            {
                Err(fail(
                    format!(
                        "{name} is read-only: it tried to change the game (and caught the error)"
                    ),
                    ScriptErrorKind::GuardMutation,
                ))
            }
            Ok((v, _)) => self
                .answer_value(&v, state, &b.script_id)
                .map_err(|(e, kind)| {
                    let message = if kind == ScriptErrorKind::Budget {
                        crate::errors::classify(&self.shared, &self.limits, e, true).0
                    } else {
                        format!("{name} must return a plain value: {e}")
                    };
                    fail(message, kind)
                }),
            Err(e) => Err(self.failure(b, name, e)),
        })
    }

    /// A game function's answer as data: at most [`ANSWER_VALUES_MAX`]
    /// values and the room's byte budget in bytes, each value charged to
    /// the call's budget ([`crate::convert::CONVERT_COST`]). A table read
    /// from the script's `storage` is carried as a copy of what it holds
    /// (like a table written into storage or a payload).
    fn answer_value(
        &self,
        v: &LuaValue,
        state: &State,
        script_id: &str,
    ) -> Result<Value, (String, ScriptErrorKind)> {
        let bytes_max = usize::try_from(self.limits.bytes_max).unwrap_or(usize::MAX);
        // Read like the call that made it: the answer may be (or hold) a
        // table the game keeps, whose length hint a read must not move
        // (docs/lua-api.md, Reading leaves no trace).
        let outside = !self.shared.read_only.get();
        if outside {
            self.shared.read_only(true);
        }
        let out =
            crate::access::charged_conversion(&self.shared, ANSWER_VALUES_MAX, bytes_max, || {
                to_value_with(v, &|t, depth| {
                    crate::storage::node_copy(&self.shared, state, script_id, t, depth)
                })
            });
        if outside {
            self.shared.read_only(false);
        }
        out.map_err(|(e, kind)| {
            let kind = match kind {
                "budget" => ScriptErrorKind::Budget,
                "memory" => ScriptErrorKind::Memory,
                _ => ScriptErrorKind::Runtime,
            };
            (e, kind)
        })
    }

    fn on_event_handlers(
        &mut self,
        ctx: &mut ScriptCtx<'_, '_>,
        event: &Event,
    ) -> Result<(), ScriptFailure> {
        let handlers = self.handlers_for(event.type_name());
        if handlers.is_empty() {
            return Ok(());
        }
        let mut named: Option<Vec<String>> = None;
        let mut wants = |bindings: &[Binding], i: usize| match &bindings[i].entity {
            None => true,
            Some(e) => named
                .get_or_insert_with(|| {
                    event
                        .kind
                        .entity_ids()
                        .iter()
                        .map(|i| i.to_string())
                        .collect()
                })
                .contains(e),
        };
        let Some(last) = (0..handlers.len())
            .rev()
            .find(|&j| wants(&self.bindings, handlers[j].0))
        else {
            return Ok(());
        };
        let mut args: Option<Vec<LuaValue>> = None;
        for (j, (i, f, name)) in handlers.iter().enumerate().take(last + 1) {
            if j != last && !wants(&self.bindings, *i) {
                continue;
            }
            let b = &self.bindings[*i];
            let built = match args.take() {
                Some(a) => a,
                None => self.event_args(event).map_err(|e| {
                    self.failure(b, name, (e.to_string(), None, ScriptErrorKind::Runtime))
                })?,
            };
            // The argument list is moved into the last call, cloned before.
            let these = if j == last {
                built
            } else {
                args = Some(built.clone());
                built
            };
            let calls = (&self.handle_call, &self.handle_many_call);
            let invoke = || invoke_handler(calls, f, these);
            self.run_handler(ctx, *i, name, invoke)?;
        }
        Ok(())
    }

    /// Runs one handler call for binding `index`; a failure, or a rejected
    /// subcommand the handler swallowed, becomes its script failure.
    pub(crate) fn run_handler(
        &self,
        ctx: &mut ScriptCtx<'_, '_>,
        index: usize,
        function: &str,
        invoke: impl FnOnce() -> mlua::Result<Answer>,
    ) -> Result<(), ScriptFailure> {
        let b = &self.bindings[index];
        if let Err(e) = self.call(invoke, Access::Handler(ctx), &b.script_id, &b.binding_id) {
            return Err(self.failure(b, function, e));
        }
        if ctx.is_doomed() {
            let (msg, kind) = self.shared.doom.borrow().clone().unwrap_or_else(|| {
                (
                    "a subcommand was rejected".into(),
                    ScriptErrorKind::Subcommand,
                )
            });
            return Err(self.failure(b, function, (msg, None, kind)));
        }
        Ok(())
    }
}

/// A drop's transform as the guard entry takes it: its ten numbers
/// (position, rotation, scale), integers where integral as everywhere a
/// script reads a number; none without one. The entry builds each
/// guard's own table from them.
type TransformArgs = Option<[LuaValue; 10]>;

fn transform_args(t: Option<&digipology_kernel::transform::Transform>) -> TransformArgs {
    t.map(|t| {
        let (p, r, s) = (t.position, t.rotation, t.scale);
        [p.x, p.y, p.z, r.x, r.y, r.z, r.w, s.x, s.y, s.z].map(crate::convert::number)
    })
}
