"""The Write panel: a causal model writes after the page's sentence token by token
(`attnviz.generate`), queued and cached (`work.cached_long`), and the panel plays it back a step
at a time in a fragment that reruns alone; a click on one of a step's likeliest tokens writes it
there instead (`Generation.branch`) and both writings are shown, where they part marked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from ...generation import MAX_STEPS, Generation
from ...views import generation as views
from .. import charts, literal, runners, widgets, work
from ..runners import Loaded
from ..state import Ctx, t

MOST_STEPS = min(32, MAX_STEPS)  # a step's rows for every head travel with the page: tens of tokens
DEMO_STEPS = 12  # the public demo's two cores are shared by every visitor
FIRST_STEPS = 10
PLAY_S = 1.0  # a step a second: time to read the row before the next one
PROBE_SHARE = 0.6  # a trained model writes after this share of its probe (a copy or induction probe's repeat begun)


@dataclass(frozen=True)
class Written:
    """A generation and its sequence's character spans (`until(k)`: its text through step k)."""

    gen: Generation
    spans: tuple[tuple[int, int], ...]
    special: tuple[bool, ...]

    def until(self, k: int) -> str:
        return views.written_until(self.gen.text, self.spans, self.special, self.gen.n_prompt + k)


def can_write(runner: Any) -> bool:
    """A causal model that chooses next tokens (what `attnviz.generate` accepts)."""
    from ...generation.engines import engine_for

    try:
        engine_for(runner)
    except ValueError:
        return False
    return True


def panel(context: Ctx, loaded: Loaded, prompt: str) -> None:
    """The panel in an expander, closed by default and run only while open; nothing for a model
    that cannot write (an encoder)."""
    if can_write(loaded.runner):
        widgets.lazily("write_open", "write.title", body, context, loaded, prompt)


def trained_panel(context: Ctx) -> None:
    """The Training lab's finished run: its model writes in the same panel, after a text it
    can read (the first part of its probe input to begin with)."""
    from ..server import session_models, training_jobs

    job = training_jobs.get(session_models.session_id())
    if job is None or not job.finished or job.model_name is None or job.run is None:
        return
    trained = session_models.trained(job.model_name)
    if trained is not None and can_write(trained.runner):
        widgets.lazily("train_write_open", "write.title", _trained_body, context, job.model_name, trained.probe)


def _trained_body(context: Ctx, name: str, probe: str) -> None:
    loaded = runners.load_runner(context, name, fallback=False)
    if loaded is None:
        return
    session, key = st.session_state, "train_write"
    if session.get(f"{key}_model") != name:  # a new run: its own probe to begin with
        session[f"{key}_model"], session[f"{key}_prompt"] = name, probe_start(loaded.runner, probe)
    prompt = st.text_input(t("write.prompt"), key=f"{key}_prompt", help=t("write.prompt_help"))
    text = runners.checked_text(context, prompt)
    if text is not None:
        body(context, loaded, text, key)


def probe_start(runner: Any, probe: str) -> str:
    """The probe input through `PROBE_SHARE` of its tokens: room left for the model to write."""
    enc = runner.encode(probe)
    spans = [b for _a, b in enc.spans]
    return probe[: spans[max(1, round(PROBE_SHARE * len(spans))) - 1]] if spans else probe


def body(context: Ctx, loaded: Loaded, prompt: str, key: str = "write") -> None:
    """The controls, the writing (queued, cached), the step played back, and a branch beside
    the first writing once one of the likeliest tokens was clicked."""
    with st.container(key=f"{key}_panel"):
        st.caption(t("write.intro"))
        room = int(loaded.runner.max_tokens) - int(loaded.runner.encode(prompt).n_input_tokens)
        most = min(DEMO_STEPS if context.settings.demo else MOST_STEPS, room)  # within the model's positions
        if most < 1:
            st.info(t("write.no_room"), icon=":material/block:")
            return
        steps, temperature, seed = _controls(key, most)
        sig = (loaded.key, prompt, steps, temperature, seed)
        written = _write(context, loaded, sig, None)
        if written is None:
            return
        branch = None
        want = st.session_state.get(f"{key}_branch")
        if want is not None and want[0] == sig and want[1] < len(written.gen.steps):
            branch = _write(context, loaded, sig, (written, int(want[1]), int(want[2])))
        shown = written if branch is None or _which(key) == "first" else branch
        runner = loaded.runner
        layer, head = widgets.layer_head(runner.n_layers, runner.n_heads, f"{key}_layer", f"{key}_head")
        playing = _play_button(key, len(shown.gen.steps))
        st.fragment(_frame, run_every=PLAY_S if playing else None)(context, shown, sig, layer, head, key)
        if branch is not None:
            _compare(context, written, branch, key)


def _controls(key: str, most: int) -> tuple[int, float, int]:
    session = st.session_state
    steps_key, temp_key, seed_key = f"{key}_steps", f"{key}_temperature", f"{key}_seed"
    if not isinstance(session.get(steps_key), int) or not 1 <= session[steps_key] <= most:
        session[steps_key] = min(FIRST_STEPS, most)
    a, b, c = st.columns(3)
    steps = a.slider(t("write.steps"), 1, most, key=steps_key, help=t("write.steps_help")) if most > 1 else 1
    temperature = b.number_input(t("write.temperature"), 0.0, 1.5, step=0.1, format="%.1f", key=temp_key,
                                 help=t("write.temperature_help"))  # fmt: skip
    seed = c.number_input(t("write.seed"), 0, 2**31 - 1, step=1, key=seed_key, help=t("write.seed_help"),
                          disabled=temperature == 0)  # fmt: skip
    return int(steps), round(float(temperature), 2), int(seed)


def _write(context: Ctx, loaded: Loaded, sig: tuple[Any, ...], fork: tuple[Written, int, int] | None) -> Written | None:
    """The writing of `sig` (or, with `fork` = (parent, step, token id), its branch) through the
    result cache, in the queue with progress; None after a message."""
    _key, prompt, steps, temperature, seed = sig
    runner = loaded.runner

    def run(_progress: Any) -> Written:
        if fork is None:
            from ...generation import generate

            return _spans(runner, generate(runner, prompt, steps, temperature=temperature, seed=seed))
        parent, step, token = fork
        return _spans(runner, parent.gen.branch(step, token))

    kind, parts = ("write", sig[2:]) if fork is None else ("write branch", (*sig[2:], *fork[1:]))
    label = t("write.writing", n=steps)
    try:
        return work.cached_long(context, loaded, kind, prompt, *parts, label=label, fn=run)
    except ValueError as exc:
        runners.refused(exc)
    except Exception as exc:
        widgets.failed("writing", exc, t("write.failed"))
    return None


def _spans(runner: Any, gen: Generation) -> Written:
    """The generation with its whole sequence's character spans, read from its ids as the
    generation reads them (its text is never tokenised again)."""
    from ...generation.sequence import sequence_encoding

    enc = sequence_encoding(runner, list(gen.ids), runner.encode(gen.prompt))
    return Written(gen, tuple((int(a), int(b)) for a, b in enc.spans), tuple(bool(s) for s in enc.special))


def _which(key: str) -> str:
    if st.session_state.pop(f"{key}_to_branch", False):
        st.session_state[f"{key}_which"] = "branch"
    return str(st.radio(t("write.show"), ("first", "branch"), key=f"{key}_which", horizontal=True,
                        format_func=widgets.option_labels("write.show_{}")))  # fmt: skip


def _play(key: str, n: int) -> None:
    session = st.session_state
    playing = not session.get(f"{key}_playing", False)
    session[f"{key}_playing"] = playing
    if playing and int(session.get(f"{key}_at", 1)) >= n:
        session[f"{key}_at"] = 1  # played to the end: again from the first step
    session.pop(f"{key}_drawn", None)


def _play_button(key: str, n: int) -> bool:
    playing = bool(st.session_state.get(f"{key}_playing", False)) and n > 1
    label, icon = (t("write.pause"), ":material/pause:") if playing else (t("write.play"), ":material/play_arrow:")
    st.button(label, key=f"{key}_play", icon=icon, on_click=_play, args=(key, n), disabled=n < 2,
              help=t("write.play_help"))  # fmt: skip
    return playing


def _next(key: str, n: int) -> None:
    st.session_state[f"{key}_at"] = min(n, int(st.session_state.get(f"{key}_at", 1)) + 1)


def _slid(key: str) -> None:
    st.session_state[f"{key}_at"] = int(st.session_state[f"{key}_step"])


def _shown_step(key: str, n: int) -> int:
    """The step shown (1-based), kept apart from the slider's own state (a timer's rerun may
    carry the slider's value from before the last step was drawn): moved on by one at each tick
    while playing; playing stops at the last step (a whole-page run, which takes the timer away)."""
    session = st.session_state
    at_key, playing_key, drawn_key = f"{key}_at", f"{key}_playing", f"{key}_drawn"
    if not isinstance(session.get(at_key), int) or not 1 <= session[at_key] <= n:
        session[at_key] = 1
    if session.get(playing_key) and session.get(drawn_key) == session[at_key]:  # a tick after a drawn step
        session[at_key] = min(n, session[at_key] + 1)
        if session[at_key] >= n:
            session[playing_key] = False
            session.pop(drawn_key, None)
            st.rerun(scope="app")
    return int(session[at_key])


def _frame(context: Ctx, shown: Written, sig: tuple[Any, ...], layer: int, head: int | None, key: str) -> None:
    """One step played back: what was written, the choices there, the cache and the sink, the rows."""
    gen = shown.gen
    n = len(gen.steps)
    k = _shown_step(key, n) - 1
    playing = bool(st.session_state.get(f"{key}_playing"))
    with st.container(key=f"{key}_step_view"):
        left, right = st.columns([4, 1], vertical_alignment="bottom")
        if playing:  # no slider while it plays: the step moves on the server alone
            left.progress((k + 1) / n, text=t("write.playing", k=k + 1, n=n))
        elif n > 1:
            st.session_state[f"{key}_step"] = k + 1
            left.slider(t("write.step"), 1, n, key=f"{key}_step", on_change=_slid, args=(key,))
        right.button(t("write.next"), key=f"{key}_next", icon=":material/skip_next:", on_click=_next, args=(key, n),
                     disabled=playing or k + 1 >= n)  # fmt: skip
        step = gen.steps[k]
        label = views.step_label(gen, k, lang=context.lang)
        with st.container(key=f"{key}_wrote"):
            st.markdown(t("write.wrote", k=k + 1, n=n, token=widgets.escape_md(label), p=f"{step.probability:.1%}"))
            st.html(
                literal.parts_body([gen.prompt, shown.until(k)[len(gen.prompt) :]], "", {1: t("write.written_hover")})
            )
        _choices(context, shown, sig, k, key)
        _numbers(context, shown, k, layer, head)
        a, b = st.columns(2, gap="large")
        with a:
            charts.chart(views.row_figure(gen, k, layer, head, lang=context.lang), key=f"chart_{key}_row")
        with b:
            charts.chart(views.layer_figure(gen, k, layer, lang=context.lang), key=f"chart_{key}_layer")
    st.session_state[f"{key}_drawn"] = k + 1


def _choices(context: Ctx, shown: Written, sig: tuple[Any, ...], k: int, key: str) -> None:
    """The step's likeliest tokens as buttons; a click on another writes it there (a branch of
    the first writing, so a branch of a branch starts from the first)."""
    st.caption(t("write.choices"))
    with st.container(horizontal=True, key=f"{key}_choices"):
        for j, choice in enumerate(views.choices(shown.gen, k, lang=context.lang)):
            text = f"{widgets.escape_md(choice.label)} · {choice.probability:.1%}"
            clicked = st.button(text, key=f"{key}_choice_{j}", type="primary" if choice.chosen else "secondary",
                                disabled=choice.chosen or choice.token_id < 0, help=t("write.choice_help"))  # fmt: skip
            if clicked:
                st.session_state[f"{key}_branch"] = (sig, k, choice.token_id)
                st.session_state[f"{key}_to_branch"] = True  # the radio above is set before it is drawn
                st.rerun(scope="app")  # the branch is written in the whole page's run, queued


def _numbers(context: Ctx, shown: Written, k: int, layer: int, head: int | None) -> None:
    step = shown.gen.steps[k]
    a, b, c = st.columns(3)
    ratio = step.cache_bytes_ungrouped / max(step.cache_bytes, 1)
    a.metric(t("write.cache"), views.size_text(step.cache_bytes, lang=context.lang),
             help=t("write.cache_help", n=step.position + 1))  # fmt: skip
    b.metric(t("write.cache_ungrouped"), views.size_text(step.cache_bytes_ungrouped, lang=context.lang),
             help=t("write.cache_ungrouped_help", ratio=f"{ratio:.0f}"))  # fmt: skip
    sink = views.sink_share(step.rows[layer], head)
    every = views.sink_share(step.rows.reshape(-1, step.rows.shape[-1]))
    c.metric(t("write.sink"), f"{sink:.0%}", help=t("write.sink_help", all=f"{every:.0%}"))


def _compare(context: Ctx, first: Written, branch: Written, key: str) -> None:
    """Both writings side by side (one above the other on a phone), each marked from where they part."""
    at = views.parting(first.gen.ids, branch.gen.ids)
    k = at - first.gen.n_prompt  # the branch's step
    with st.container(key=f"{key}_branches"):
        st.markdown(f"**{t('write.branches')}**")
        if k >= len(first.gen.steps) or k >= len(branch.gen.steps):
            st.caption(t("write.same"))
            return
        a = views.step_label(first.gen, k, lang=context.lang)
        b = views.step_label(branch.gen, k, lang=context.lang)
        st.caption(t("write.parted", k=k + 1, a=widgets.escape_md(a), b=widgets.escape_md(b)))
        columns = st.columns(2, gap="large")
        for column, which, written in zip(columns, ("first", "branch"), (first, branch), strict=True):
            with column, st.container(key=f"{key}_branch_{which}"):
                st.markdown(t(f"write.show_{which}"))
                common = written.until(k - 1) if k > 0 else written.gen.prompt
                rest = written.gen.text[len(common) :]
                st.html(literal.parts_body([common, rest], "", {1: t("write.parted_hover")}))
        st.button(t("write.forget"), key=f"{key}_forget", on_click=_forget, args=(key,))


def _forget(key: str) -> None:
    st.session_state.pop(f"{key}_branch", None)
    st.session_state[f"{key}_which"] = "first"
