"""Tests for deep_rl_zoo.checkpoint."""

import os
import pickle

import numpy as np
import pytest
import torch
from torch import nn

from deep_rl_zoo import checkpoint

torch.set_num_threads(1)

FLAGS = {
    "environment_name": "Breakout",
    "num_iterations": 3,
    "learning_rate": 0.00025,
    "use_tensorboard": False,
    "load_checkpoint_file": None,
    "tag": "",
    "hidden_sizes": [64, 64],
}
COUNTERS = {"env_steps": 4000, "learner_steps": 125, "iteration": 0}


def _save(path, agent_name="PPO", environment_name="Breakout", iteration=0, state=None, flags=None):
    return checkpoint.save_checkpoint(
        str(path),
        agent_name=agent_name,
        environment_name=environment_name,
        iteration=iteration,
        state={"step": torch.tensor([iteration])} if state is None else state,
        counters=COUNTERS,
        flags=FLAGS if flags is None else flags,
    )


def _load_error(path, **kwargs) -> str:
    with pytest.raises(checkpoint.CheckpointError) as error:
        checkpoint.load_checkpoint(path, **kwargs)
    message = str(error.value)
    assert "\n" not in message
    return message


def _make_network_and_optimizer():
    torch.manual_seed(7)
    network = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    return network, torch.optim.Adam(network.parameters(), lr=0.01)


def _adam_step(network, optimizer, inputs, targets):
    optimizer.zero_grad()
    loss = ((network(inputs) - targets) ** 2).mean()
    loss.backward()
    optimizer.step()


def test_checkpoint_file_name():
    assert checkpoint.checkpoint_file_name("PPO", "Breakout", 0) == "PPO_Breakout_0.ckpt"
    assert checkpoint.checkpoint_file_name("DQN", "ALE/Pong-v5", 12) == "DQN_ALE-Pong-v5_12.ckpt"
    with pytest.raises(ValueError, match="iteration"):
        checkpoint.checkpoint_file_name("PPO", "Breakout", -1)
    with pytest.raises(ValueError, match="agent_name"):
        checkpoint.checkpoint_file_name("", "Breakout", 0)


def test_round_trip_restores_state_and_optimizer_continues_identically(tmp_path):
    inputs = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    targets = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    network, optimizer = _make_network_and_optimizer()
    _adam_step(network, optimizer, inputs, targets)

    path = tmp_path / "nested" / "dir" / checkpoint.checkpoint_file_name("PPO", "Breakout", 0)
    state = {"network": network.state_dict(), "optimizer": optimizer.state_dict()}
    assert _save(path, state=state) == str(path)

    _adam_step(network, optimizer, inputs, targets)  # the uninterrupted run's second step

    loaded = checkpoint.load_checkpoint(str(path), agent_name="PPO", environment_name="Breakout")
    assert loaded["agent_name"] == "PPO"
    assert loaded["environment_name"] == "Breakout"
    assert loaded["iteration"] == 0
    assert loaded["counters"] == COUNTERS
    assert loaded["flags"] == FLAGS
    assert loaded["format_version"] == checkpoint.FORMAT_VERSION
    assert loaded["versions"]["torch"].split("+")[0] == torch.__version__.split("+")[0]
    assert loaded["versions"]["numpy"] == np.__version__
    assert "deep_rl_zoo" in loaded["versions"]
    assert loaded["created_at"].endswith("+00:00")

    resumed_network, resumed_optimizer = _make_network_and_optimizer()
    resumed_network.load_state_dict(loaded["state"]["network"])
    resumed_optimizer.load_state_dict(loaded["state"]["optimizer"])
    assert resumed_optimizer.state_dict()["state"][0]["step"].item() == 1.0
    _adam_step(resumed_network, resumed_optimizer, inputs, targets)

    for resumed, uninterrupted in zip(resumed_network.parameters(), network.parameters()):
        assert torch.equal(resumed, uninterrupted)


def test_save_overwrites_previous_file(tmp_path):
    path = tmp_path / "PPO_Breakout_0.ckpt"
    _save(path, iteration=1)
    _save(path, iteration=2)
    loaded = checkpoint.load_checkpoint(str(path))
    assert loaded["iteration"] == 2
    assert torch.equal(loaded["state"]["step"], torch.tensor([2]))
    assert os.listdir(tmp_path) == ["PPO_Breakout_0.ckpt"]


def test_crash_at_rename_keeps_old_file_and_leaves_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "PPO_Breakout_0.ckpt"
    _save(path, iteration=1)
    old_bytes = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("simulated crash")

    monkeypatch.setattr(checkpoint.os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        _save(path, iteration=2)

    assert path.read_bytes() == old_bytes
    assert os.listdir(tmp_path) == ["PPO_Breakout_0.ckpt"]
    assert checkpoint.load_checkpoint(str(path))["iteration"] == 1


def test_crash_while_writing_keeps_old_file_and_leaves_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "PPO_Breakout_0.ckpt"
    _save(path, iteration=1)
    old_bytes = path.read_bytes()

    def write_half_then_crash(obj, file):
        file.write(old_bytes[: len(old_bytes) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint.torch, "save", write_half_then_crash)
    with pytest.raises(KeyboardInterrupt):
        _save(path, iteration=2)

    assert path.read_bytes() == old_bytes
    assert os.listdir(tmp_path) == ["PPO_Breakout_0.ckpt"]


def test_truncated_file_is_refused(tmp_path):
    path = tmp_path / "PPO_Breakout_0.ckpt"
    _save(path)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    message = _load_error(str(path))
    assert message.startswith(f"checkpoint {path} is truncated or corrupt")


def test_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.ckpt"
    path.write_bytes(b"")
    assert _load_error(str(path)) == (
        f"checkpoint {path} is truncated or corrupt (file is empty): use an older checkpoint or train again"
    )


def test_random_bytes_are_refused(tmp_path):
    path = tmp_path / "random.ckpt"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, size=4096, dtype=np.uint8).tobytes())
    assert "corrupt" in _load_error(str(path))


class _Malicious:
    """Unpickling this object would call print('pwned'): the stand-in for arbitrary code."""

    def __reduce__(self):
        return (print, ("pwned",))


@pytest.mark.parametrize("writer", ["torch", "pickle"])
def test_pickled_code_is_refused_and_never_run(tmp_path, capsys, writer):
    path = tmp_path / "malicious.ckpt"
    payload = {"format": checkpoint.FORMAT_NAME, "format_version": checkpoint.FORMAT_VERSION, "x": _Malicious()}
    if writer == "torch":
        torch.save(payload, str(path))
        message = _load_error(str(path))
        assert "refused because loading it could run code" in message
        assert "print" in message
    else:
        path.write_bytes(pickle.dumps(payload, protocol=2))
        _load_error(str(path))
    assert "pwned" not in capsys.readouterr().out


def test_file_that_is_not_a_deep_rl_zoo_checkpoint_is_refused(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save({"network": {"weight": torch.zeros(2)}}, str(path))
    assert _load_error(str(path)) == (
        f"{path} is not a Deep RL Zoo checkpoint: pass a .ckpt file written by Deep RL Zoo training"
    )


def test_wrong_format_version_is_refused(tmp_path):
    path = tmp_path / "future.ckpt"
    torch.save({"format": checkpoint.FORMAT_NAME, "format_version": 99}, str(path))
    assert "has format version 99 but this Deep RL Zoo reads version 1" in _load_error(str(path))


def test_missing_keys_are_refused(tmp_path):
    path = tmp_path / "partial.ckpt"
    torch.save({"format": checkpoint.FORMAT_NAME, "format_version": 1, "agent_name": "PPO"}, str(path))
    message = _load_error(str(path))
    assert "missing environment_name, iteration, state, counters, flags, versions, created_at" in message


def test_agent_mismatch_is_refused(tmp_path):
    path = tmp_path / "DQN_Breakout_0.ckpt"
    _save(path, agent_name="DQN")
    assert _load_error(str(path), agent_name="PPO") == (
        f"checkpoint {path} was written by agent DQN, not PPO: pass a checkpoint written by PPO"
    )


def test_any_of_several_agents_is_accepted_and_another_refused_naming_them(tmp_path):
    path = tmp_path / "A2C-grad_Pong_0.ckpt"
    _save(path, agent_name="A2C-grad")
    assert checkpoint.load_checkpoint(str(path), agent_name=("A2C", "A2C-grad"))["agent_name"] == "A2C-grad"
    assert _load_error(str(path), agent_name=("PPO", "IMPALA")) == (
        f"checkpoint {path} was written by agent A2C-grad, not PPO or IMPALA: pass a checkpoint written by PPO or IMPALA"
    )


def test_environment_mismatch_is_refused(tmp_path):
    path = tmp_path / "PPO_Pong_0.ckpt"
    _save(path, environment_name="Pong")
    assert _load_error(str(path), environment_name="Breakout") == (
        f"checkpoint {path} was written for environment Pong, not Breakout: "
        "pass a checkpoint trained on Breakout"
    )


def test_lunar_lander_v2_and_v3_are_the_same_environment(tmp_path):
    path = tmp_path / "PPO_LunarLander-v3_0.ckpt"
    _save(path, environment_name="LunarLander-v3")
    assert checkpoint.load_checkpoint(str(path), environment_name="LunarLander-v2")["iteration"] == 0
    _save(path, environment_name="LunarLander-v2")
    assert checkpoint.load_checkpoint(str(path), environment_name="LunarLander-v3")["iteration"] == 0


@pytest.mark.parametrize("path", ["", "   ", None])
def test_empty_path_is_refused(path):
    assert _load_error(path) == (
        "--load_checkpoint_file is empty: pass the path of a .ckpt file written by training"
    )


def test_missing_path_and_directory_are_refused(tmp_path):
    missing = tmp_path / "nope.ckpt"
    assert _load_error(str(missing)) == f"checkpoint {missing} does not exist: check the path of the .ckpt file"
    assert _load_error(str(tmp_path)) == (
        f"checkpoint {tmp_path} is a directory: pass the path of a .ckpt file inside it"
    )


@pytest.mark.parametrize(
    "flags, expected",
    [
        ({"device": torch.device("cpu")}, r"flags\['device'\] must be str, int, float, bool, None"),
        ({"sizes": (64, 64)}, r"flags\['sizes'\] must be .* got tuple"),
        ({"sizes": [64, [1]]}, r"flags\['sizes'\] must be .* got list"),
        ({3: "x"}, "flags keys must be flag names"),
    ],
)
def test_flags_validation(tmp_path, flags, expected):
    with pytest.raises(ValueError, match=expected):
        _save(tmp_path / "x.ckpt", flags=flags)
    assert not os.listdir(tmp_path)


def test_state_and_counters_validation(tmp_path):
    with pytest.raises(ValueError, match=r"state\['replay'\]\['obs'\] must hold only tensors"):
        _save(tmp_path / "x.ckpt", state={"replay": {"obs": np.zeros(3)}})
    with pytest.raises(ValueError, match="counters must map str names to int or float values"):
        checkpoint.save_checkpoint(
            str(tmp_path / "x.ckpt"),
            agent_name="PPO",
            environment_name="Breakout",
            iteration=0,
            state={},
            counters={"env_steps": "many"},
            flags={},
        )
    with pytest.raises(ValueError, match="path"):
        _save("")
    assert not os.listdir(tmp_path)


def test_latest_checkpoint_picks_highest_iteration(tmp_path):
    assert checkpoint.latest_checkpoint(str(tmp_path / "missing"), "PPO", "Breakout") is None
    assert checkpoint.latest_checkpoint(str(tmp_path), "PPO", "Breakout") is None
    for name in [
        "PPO_Breakout_2.ckpt",
        "PPO_Breakout_10.ckpt",
        "PPO_Breakout_9.ckpt",
        "PPO_Breakout_11.ckpt.tmpab12",  # an unfinished write
        "PPO_Breakout_12_3.ckpt",
        "DQN_Breakout_50.ckpt",
        "PPO_Pong_50.ckpt",
    ]:
        (tmp_path / name).write_bytes(b"")
    assert checkpoint.latest_checkpoint(str(tmp_path), "PPO", "Breakout") == str(tmp_path / "PPO_Breakout_10.ckpt")
    (tmp_path / "PPO_ALE-Pong-v5_4.ckpt").write_bytes(b"")
    assert checkpoint.latest_checkpoint(str(tmp_path), "PPO", "ALE/Pong-v5") == str(tmp_path / "PPO_ALE-Pong-v5_4.ckpt")


def test_the_ways_of_writing_one_atari_game_are_one_environment(tmp_path):
    from deep_rl_zoo import main_loop
    from deep_rl_zoo.settings import Common

    path = _save(str(tmp_path / "PPO_Pong_0.ckpt"), environment_name="Pong")
    for name in ("Pong", "ALE/Pong-v5", "PongNoFrameskip-v4", "pong"):
        assert checkpoint.load_checkpoint(path, environment_name=name)["environment_name"] == "Pong"
    with pytest.raises(checkpoint.CheckpointError, match="Breakout"):
        checkpoint.load_checkpoint(path, environment_name="Breakout")
    # Training runs name their files and experiments by the canonical name.
    for name in ("ALE/Pong-v5", "PongNoFrameskip-v4", "pong"):
        assert main_loop.canonical_environment(Common(environment_kind="atari", environment_name=name)).environment_name == "Pong"
    assert main_loop.canonical_environment(Common(environment_kind="atari", environment_name="montezuma_revenge")).environment_name == "MontezumaRevenge"
    assert main_loop.canonical_environment(Common(environment_kind="classic", environment_name="LunarLander-v2")).environment_name == "LunarLander-v2"


def test_a_state_of_another_network_layout_is_refused_in_one_line():
    older, newer = nn.LSTM(128, 4), nn.LSTM(131, 4)  # e.g. R2D2's LSTM before it took the previous action and reward
    with pytest.raises(checkpoint.CheckpointError) as caught:
        checkpoint.load_state(newer, older.state_dict(), 'checkpoint old.ckpt')
    message = str(caught.value)
    assert message.startswith('checkpoint old.ckpt holds networks of another layout than this version of the agent builds (size mismatch for weight_ih_l0')
    assert '\n' not in message and message.endswith('retrain with this version, or use the version that wrote it')
    checkpoint.load_state(newer, newer.state_dict(), 'checkpoint new.ckpt')  # the same layout loads

    class Failing:
        def load_state_dict(self, state):
            raise RuntimeError('something else')

    with pytest.raises(RuntimeError, match='something else'):  # not a layout mismatch: not hidden
        checkpoint.load_state(Failing(), {}, 'checkpoint x.ckpt')


def test_a_state_that_lacks_a_part_the_agent_loads_is_refused_in_one_line():
    # e.g. discrete SAC's checkpoints before its critics became one module ('critic_1', 'critic_2', ...).
    class Agent:
        def load_state_dict(self, state):
            self.critics = state['critics']

    with pytest.raises(checkpoint.CheckpointError) as caught:
        checkpoint.load_state(Agent(), {'network': {}, 'critic_1': {}}, 'the checkpoint this run resumes from')
    assert str(caught.value) == (
        "the checkpoint this run resumes from holds no 'critics' that this version of the agent loads (it holds network, "
        "critic_1): retrain with this version, or use the version that wrote it"
    )

    class Faulty:
        def load_state_dict(self, state):
            raise KeyError('network')  # a key the state holds: the loader's own fault, not hidden

    with pytest.raises(KeyError, match='network'):
        checkpoint.load_state(Faulty(), {'network': {}}, 'checkpoint x.ckpt')
