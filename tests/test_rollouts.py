"""Batched rollouts (issue 19): `simstep.rollouts` on worker processes and on a local Ray instance
reproduces serial runs bitwise, in input order; a failed or crashed episode is reported with its
parameters while the others complete; the `sweep` command line."""
import functools
import os
import sys

import numpy as np
import pytest

import scenes
import simstep
from simstep import EpisodeError, FinalState, RolloutPool, Simulator, rollouts
from simstep.__main__ import main
from simstep.rollouts import SUMMARY_OUTCOMES, max_penetration, summary

STEPS = 60


# module-level: worker processes import them by name -------------------------------------------
def stack(n=2, friction=0.5, fail=False, crash=False):
    if crash:
        os._exit(7)          # a worker that dies (as from a segfault or the OOM killer)
    if fail:
        raise ValueError(f"asked to fail (n={n})")
    return scenes.box_stack(n=n, friction=friction)


def pendulum(n_links=3):
    return scenes.pendulum_benchmark(n_links=n_links)


def pd_controller(sim, p):
    """Gains from the parameters; a callback that moves the target after every step."""
    sim.set_targets({"pendulum/hinge0": 0.3}, kp=p["kp"], kd=0.5)

    def after_step(s):
        if s.steps == STEPS // 2:
            s.set_targets({"pendulum/hinge0": -0.3})
    return after_step


def final_z(sim, result):
    return float(result.q[-1].max())


def box_z(sim):
    return np.array([sim.body_pose(b)[0][2] for b in sim.model.body_names])


# references: the same episodes, one after the other in this process, fresh objects each -------
def reference(make_world, params, steps, controller=None, keys=None):
    out = []
    for p in params:
        kw = {k: v for k, v in p.items() if keys is None or k in keys}
        sim = Simulator(make_world(**kw))
        cb = controller(sim, p) if controller is not None else None
        out.append(sim.run(steps=steps, record=True, record_contacts=False, callback=cb))
    return out


def assert_bitwise(a, b):
    for name in ("t", "q", "v", "iterations", "ncontacts"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), f"{name} differs"
    assert a.dt == b.dt and a.body_names == b.body_names


@pytest.fixture(scope="module")
def pool():
    with RolloutPool("process", workers=2) as p:
        yield p


# process backend ------------------------------------------------------------------------------
def test_process_backend_is_bitwise_serial_in_input_order():
    # unequal episodes (6 boxes first): they finish out of input order
    params = [dict(n=6, friction=0.3), dict(n=1), dict(n=2, friction=0.9), dict(n=3), dict(n=1, friction=0.2)]
    ref = reference(stack, params, STEPS)
    res = rollouts(stack, params, steps=STEPS, workers=2, progress=False)
    assert isinstance(res, list) and len(res) == len(params)
    for r, e in zip(res, ref):
        assert isinstance(r, simstep.Trajectory)
        assert_bitwise(r, e)
    assert set(res.worker) == {0, 1}                 # both workers ran episodes
    assert res.kernel_compilations == 0              # kernels loaded from numba's cache, none compiled
    assert np.all(res.episode_wall > 0) and res.wall > 0


def test_serial_backend_matches_the_plain_loop():
    params = [dict(n=2), dict(n=2, friction=0.1), dict(n=2)]      # the world of n=2 is reused
    for r, e in zip(rollouts(stack, params, steps=STEPS, backend="serial", progress=False),
                    reference(stack, params, STEPS)):
        assert_bitwise(r, e)


def test_failed_and_crashed_episodes_do_not_lose_the_others(pool):
    params = [dict(n=2), dict(n=3, fail=True), dict(n=1), dict(n=2, crash=True), dict(n=3), dict(n=1, friction=0.7)]
    seen = []
    res = pool.map(stack, params, steps=STEPS, progress=False, on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == list(range(len(params)))
    err = res[1]
    assert isinstance(err, EpisodeError) and err.index == 1 and err.params == dict(n=3, fail=True)
    assert err.error == "ValueError: asked to fail (n=3)"
    assert "Traceback" in err.traceback and "in stack" in err.traceback
    assert "episode 1" in str(err) and "'fail': True" in str(err)
    crash = res[3]
    assert isinstance(crash, EpisodeError) and crash.params == dict(n=2, crash=True)
    assert "exited with code 7" in crash.error
    assert res.failed == [err, crash]
    good = [0, 2, 4, 5]
    for i, e in zip(good, reference(stack, [params[i] for i in good], STEPS)):
        assert_bitwise(res[i], e)
    # the pool replaced the dead worker and goes on
    again = pool.map(stack, [dict(n=1)], steps=5, progress=False)
    assert isinstance(again[0], simstep.Trajectory)


def test_errors_raise(pool):
    with pytest.raises(EpisodeError, match=r"episode 0 .* ValueError: asked to fail .*1 of 2 episodes failed"):
        pool.map(stack, [dict(fail=True), dict()], steps=2, progress=False, errors="raise")


def test_controller_gains_and_initial_state_from_params(pool):
    params = [dict(n_links=3, kp=20.0), dict(n_links=3, kp=80.0),
              dict(n_links=3, kp=20.0, q0=np.array([0.2, -0.1, 0.05]), v0=np.array([0.0, 1.0, 0.0]))]
    res = pool.map(pendulum, params, steps=STEPS, controller=pd_controller, progress=False)
    # serial reference: q0 / v0 set after building, then the controller
    ref = []
    for p in params:
        sim = Simulator(pendulum(p["n_links"]))
        if "q0" in p:
            sim.set_state(p["q0"], p["v0"])
        cb = pd_controller(sim, p)
        ref.append(sim.run(steps=STEPS, record=True, record_contacts=False, callback=cb))
    for r, e in zip(res, ref):
        assert_bitwise(r, e)
    assert not np.array_equal(res[0].q, res[1].q)        # the gains made a difference
    assert res[2].q[0].tolist() == [0.2, -0.1, 0.05]


def test_robot_world_reused_by_a_worker_is_bitwise_fresh(pool):
    """G1 standing under its joint PD (world.actuation): the workers build the world once and
    reuse it; every episode equals one on a freshly built world, initial states from q0."""
    q0 = scenes.humanoid().q0.copy()
    q1 = q0.copy()
    q1[7:] += 0.02
    params = [dict(), dict(q0=q1), dict(), dict(q0=q1)]
    res = pool.map(scenes.humanoid, params, steps=30, progress=False)
    for r, p in zip(res, params):
        sim = Simulator(scenes.humanoid())
        if "q0" in p:
            sim.set_state(p["q0"], sim.v)
        assert_bitwise(r, sim.run(steps=30, record=True, record_contacts=False))
    assert not np.array_equal(res[0].q, res[1].q)


def test_final_state_outputs_and_reduce(pool):
    params = [dict(n=1), dict(n=3)]
    ref = reference(stack, params, STEPS)
    fin = pool.map(stack, params, steps=STEPS, record=False, outputs=dict(z=box_z), progress=False)
    for f, e, p in zip(fin, ref, params):
        assert isinstance(f, FinalState) and f.steps == STEPS and f.t == e.t[-1]
        assert f.q.tobytes() == e.q[-1].tobytes() and f.v.tobytes() == e.v[-1].tobytes()
        assert f.outputs["z"].shape == (STEPS + 1, p["n"])
    traj = pool.map(stack, params, steps=STEPS, outputs=dict(z=box_z), progress=False)
    assert np.array_equal(traj[1].outputs["z"], fin[1].outputs["z"])
    vals = pool.map(stack, params, steps=STEPS, reduce=final_z, progress=False)
    assert vals == [final_z(None, e) for e in ref]
    outs = pool.map(stack, params, steps=STEPS, reduce=summary, outputs=dict(max_penetration=max_penetration),
                    progress=False)
    assert set(SUMMARY_OUTCOMES) <= set(outs[0])
    assert outs[1]["height"] == pytest.approx(0.5, abs=1e-3) and outs[1]["displacement"] < 1e-3


def test_duration_dt_and_sim_options(pool):
    [r] = pool.map(stack, [dict(n=1)], duration=0.01, dt=2e-3, sim_options=dict(erp=0.1), progress=False)
    sim = Simulator(stack(n=1), dt=2e-3, erp=0.1)
    assert_bitwise(r, sim.run(duration=0.01, record=True, record_contacts=False))
    assert len(r) == 6


def test_unpicklable_callables_are_refused_before_anything_starts():
    def local(n=1):
        return scenes.box_stack(n=n)
    for backend in ("process", "ray"):
        with pytest.raises(TypeError, match="define it at module level"):
            rollouts(lambda n=1: scenes.box_stack(n=n), [dict(n=1)], steps=1, backend=backend)
        with pytest.raises(TypeError, match=r"make_world \(.*local\) must be picklable"):
            rollouts(local, [dict(n=1)], steps=1, backend=backend)
        with pytest.raises(TypeError, match="controller"):
            rollouts(stack, [dict(n=1)], steps=1, backend=backend, controller=lambda sim, p: None)
    # the serial backend takes anything
    [r] = rollouts(lambda n=1: scenes.box_stack(n=n), [dict(n=1)], steps=2, backend="serial", progress=False)
    assert len(r) == 3


@pytest.mark.parametrize("kw, exc, match", [
    (dict(params=dict(n=1)), TypeError, "list of dicts"),
    (dict(params=[1, 2]), TypeError, r"params\[0\] must be a dict"),
    (dict(params=[dict(size=2)]), TypeError, r"\['size'\], which make_world does not take"),
    (dict(steps=None), TypeError, "either steps"),
    (dict(duration=1.0), TypeError, "not both"),
    (dict(steps=-1), ValueError, "steps"),
    (dict(backend="threads"), ValueError, "backend must be one of"),
    (dict(workers=0), ValueError, "workers must be a positive integer"),
    (dict(errors="ignore"), ValueError, "errors must be"),
    (dict(outputs=dict(z=3)), TypeError, "outputs must be a dict"),
    (dict(sim_options=dict(dt=1e-3)), TypeError, "give dt as rollouts"),
    (dict(params=[dict(n=1, friction=lambda: 0)]), TypeError, r"params\[0\] cannot be sent"),
])
def test_bad_arguments(kw, exc, match):
    args = dict(params=[dict(n=1)], steps=1)
    args.update(kw)
    with pytest.raises(exc, match=match):
        rollouts(stack, progress=False, **args)


def test_empty_batch():
    assert rollouts(stack, [], steps=1) == []


# command line -----------------------------------------------------------------------------------
def test_sweep_writes_outcomes_and_plot(tmp_path, capsys):
    out, png = tmp_path / "sweep.npz", tmp_path / "sweep.png"
    rc = main(["sweep", "box_stack", "--param", "friction=0.2:1.0:3", "--param", "n=1,2", "--duration", "0.02",
               "--backend", "serial", "--out", str(out), "--outcome", "height", "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "6 episodes of 0.02 s" in text and "6 of 6 episodes" in text and "simulated s per wall s" in text
    z = np.load(out)
    assert z["param_friction"].tolist() == [0.2, 0.2, 0.6, 0.6, 1.0, 1.0]
    assert z["param_n"].tolist() == [1, 2, 1, 2, 1, 2]
    assert z["height"] == pytest.approx([0.1, 0.3] * 3, abs=1e-3)
    assert not z["failed"].any() and z["names"].tolist() == ["friction", "n"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"       # beside --out by default


def test_sweep_on_worker_processes_from_the_real_entry_point(tmp_path):
    """`python -m simstep sweep`: its spawned workers import the CLI module as their main."""
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "s.npz"
    p = subprocess.run([sys.executable, "-m", "simstep", "sweep", "box_stack", "--param", "friction=0.3,0.8",
                        "--set", "n=2", "--duration", "0.01", "--workers", "2", "--out", str(out), "--plot",
                        str(tmp_path / "s.png")], cwd=root, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "2 of 2 episodes" in p.stdout and "2 process worker(s)" in p.stdout
    assert "box_stack: 100%" in p.stderr          # the progress bar
    assert np.load(out)["displacement"].shape == (2,)


@pytest.mark.parametrize("args, expect", [
    (["sweep", "box_stack"], "the following arguments are required: --param"),
    (["sweep", "box_stack", "--param", "size=1,2"], "no parameter 'size'"),
    (["sweep", "box_stack", "--param", "friction=0.2:1"], "a range is A:B:N"),
    (["sweep", "box_stack", "--param", "friction=1", "--outcome", "speed"], "outcomes: displacement"),
    (["sweep", "box_stack", "--param", "friction=1", "--bogus"], "sweep options: --param"),
])
def test_sweep_bad_input_one_line(args, expect, capsys):
    assert main(args) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and expect in lines[0]


# Ray: one local instance for the tests below, shut down at the end of the module -----------------
@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield ray
    if started:
        ray.shutdown()


def test_ray_backend_bitwise_serial_errors_and_crash(ray_local):
    params = [dict(n=4, friction=0.3), dict(n=1), dict(n=2, fail=True), dict(n=2), dict(n=1, crash=True),
              dict(n=3), dict(n=1, friction=0.8)]
    with RolloutPool("ray") as rp:
        assert rp.workers == 2
        res = rp.map(stack, params, steps=STEPS, progress=False)
        good = [0, 1, 3, 5, 6]
        for i, e in zip(good, reference(stack, [params[i] for i in good], STEPS)):
            assert_bitwise(res[i], e)
            assert res[i].q.flags.writeable          # copied out of the object store
        assert isinstance(res[2], EpisodeError) and res[2].error == "ValueError: asked to fail (n=2)"
        assert isinstance(res[4], EpisodeError) and "WorkerDied" in res[4].error
        assert res[4].params == dict(n=1, crash=True)
        assert res.kernel_compilations == 0
        # reduce and controller on the same (restarted) actors
        vals = rp.map(pendulum, [dict(kp=20.0), dict(kp=80.0)], steps=STEPS, controller=pd_controller,
                      reduce=final_z, progress=False)
        ref = reference(pendulum, [dict(kp=20.0), dict(kp=80.0)], STEPS, controller=pd_controller, keys=("n_links",))
        assert vals == [final_z(None, e) for e in ref]


def test_ray_sweep_command_line(ray_local, tmp_path, capsys):
    out = tmp_path / "r.npz"
    rc = main(["sweep", "box_stack", "--param", "friction=0.2:1.0:3", "--set", "n=1", "--duration", "0.01",
               "--backend", "ray", "--out", str(out), "--no-progress"])
    assert rc == 0
    assert "3 of 3 episodes" in capsys.readouterr().out
    assert np.load(out)["failed"].tolist() == [False] * 3


def test_ray_missing_gives_install_hint(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"pip install '\.\[ray\]'"):
        rollouts(stack, [dict(n=1)], steps=1, backend="ray", progress=False)


def test_partial_of_module_level_function_is_accepted(pool):
    [r] = pool.map(functools.partial(stack, friction=0.25), [dict(n=1)], steps=3, progress=False)
    assert_bitwise(r, reference(functools.partial(stack, friction=0.25), [dict(n=1)], 3)[0])


# The Ray pool's bookkeeping when an actor dies, on a fake Ray (deterministic: the real race -----
# cannot be forced). Each actor runs its tasks at submission; an episode with crash=True kills
# its actor, and with lose=True Ray also loses the result of the actor's previous task, which
# had finished (what a real Ray can do when an actor dies with several tasks in flight).
class _FakeActorError(Exception):
    pass


class _FakeRay:
    class exceptions:
        RayError = Exception
        RayActorError = _FakeActorError

        class GetTimeoutError(Exception):
            pass

    def __init__(self):
        self.actors = []

    def is_initialized(self):
        return True

    def cluster_resources(self):
        return {"CPU": 2}

    def put(self, x):
        return x

    def kill(self, actor):
        actor.dead = True

    def remote(self, **kw):
        fake = self

        class _Class:
            @staticmethod
            def remote(path):
                a = _FakeActor()
                fake.actors.append(a)
                return a
        return lambda cls: _Class

    def wait(self, refs, num_returns=1, timeout=None):
        return refs[:num_returns], refs[num_returns:]

    def get(self, refs, timeout=None):
        if isinstance(refs, list):
            return [self.get(r) for r in refs]
        refs.fetched = True
        if refs.error:
            raise _FakeActorError("the actor died")
        return refs.value


class _FakeRef:
    def __init__(self, value=None, error=False):
        self.value, self.error, self.fetched = value, error, False


class _FakeMethod:
    def __init__(self, f):
        self.remote = f


class _FakeActor:
    def __init__(self):
        self.dead, self.last, self.runs, self.refs = False, None, [], []
        self.set_spec = _FakeMethod(lambda key, blob: _FakeRef(0, self.dead))
        self.run = _FakeMethod(self._run)

    def _run(self, i, p):
        # (episode, tasks of this actor submitted before it and not yet fetched by the driver)
        self.runs.append((i, sum(not r.fetched for r in self.refs)))
        if self.dead:
            ref = _FakeRef(error=True)
        elif p.get("crash"):
            self.dead = True
            if p.get("lose") and self.last is not None:
                self.last.error = True
            ref = _FakeRef(error=True)
        else:
            ref = self.last = _FakeRef((i, True, f"result {i}", (0.0, 0.0), 0))
        self.refs.append(ref)
        return ref


def _fake_ray_run(monkeypatch, params):
    ro = sys.modules["simstep.rollouts"]      # the module (simstep.rollouts is also a function)
    fake = _FakeRay()
    monkeypatch.setattr(ro, "_import_ray", lambda: fake)
    backend = ro._RayBackend(2)
    calls = {}
    backend.run("spec", None, b"", params, lambda i, ok, payload, wall, actor, comp: calls.setdefault(i, []).append(
        (ok, payload, actor)), len(params))
    return calls, fake


def test_ray_actor_death_reruns_unfinished_episodes_alone(monkeypatch):
    # actor 0 gets episodes 0 and 1; 1 kills it and Ray loses 0's finished result: both are
    # rerun, each alone on a new actor; only 1, which kills its actor again, is reported
    params = [dict(), dict(crash=True, lose=True), dict(), dict(), dict()]
    calls, fake = _fake_ray_run(monkeypatch, params)
    assert sorted(calls) == list(range(5)) and all(len(c) == 1 for c in calls.values())
    for i in (0, 2, 3, 4):
        assert calls[i][0][:2] == (True, f"result {i}")
    ok, (msg, tb), actor = calls[1][0]
    assert not ok and msg.startswith("WorkerDied: the Ray actor running this episode died")
    assert fake.actors[0].runs == [(0, 0), (1, 1)]          # 1 was queued behind 0
    reruns = [r for a in fake.actors[1:] for r in a.runs if r[0] in (0, 1)]
    assert sorted(reruns) == [(0, 0), (1, 0)]               # each suspect ran once more, alone


def test_ray_actor_death_keeps_results_that_arrived(monkeypatch):
    # the crash's actor finished episode 0 and Ray kept it: 0 is reported once, from that actor
    params = [dict(), dict(crash=True), dict()]
    calls, fake = _fake_ray_run(monkeypatch, params)
    assert calls[0] == [(True, "result 0", 0)] and calls[2][0][:2] == (True, "result 2")
    assert not calls[1][0][0] and "WorkerDied" in calls[1][0][1][0]
    runs_of_1 = [r for a in fake.actors for r in a.runs if r[0] == 1]
    assert runs_of_1 == [(1, 1), (1, 0)]         # with 0 in flight, then alone
