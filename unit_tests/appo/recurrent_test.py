"""APPO's recurrent core (Sample Factory's use_rnn): the unrolled core equals step-by-step acting, the learner's
chunks of `recurrence` samples start from the states the actor stored (so the ratio is exactly 1 before the first
gradient step, for whole-rollout and shorter chunks, GRU and LSTM), V-trace unrolls whole rollouts, and the
settings that cannot work are refused naming the flags. End-to-end: run_classic with --use_rnn, then eval_agent."""

import os
import re

import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import gym_env
from deep_rl_zoo.appo import sample_factory_config
from deep_rl_zoo.appo.settings import AppoSettings
from deep_rl_zoo.networks.sample_factory import SampleFactoryActorCritic
from deep_rl_zoo.rollouts import PolicySetActor, policy_set_rollout_spec
from unit_tests.appo.agent_test import GAMMA, make_learner
from unit_tests.helpers import TRACEBACK, run_module, stderr_lines


def recurrent_network(rnn_type='gru', seed=0, size=4, num_actions=2, rnn_size=8, normalize_input=False):
    torch.manual_seed(seed)
    return SampleFactoryActorCritic((size,), num_actions, [16], [16], nonlinearity='tanh', rnn_type=rnn_type, rnn_size=rnn_size, normalize_input=normalize_input)


@pytest.mark.parametrize('rnn_type, state_size', [('gru', 8), ('lstm', 16)])
def test_unroll_equals_stepping_with_the_state_zeroed_where_episodes_start(rnn_type, state_size):
    network = recurrent_network(rnn_type)
    assert network.is_recurrent and network.state_size == state_size
    generator = torch.Generator().manual_seed(1)
    observation = torch.randn(5, 3, 4, generator=generator)
    state = torch.randn(3, state_size, generator=generator)
    episode_start = torch.zeros(5, 3, dtype=torch.bool)
    episode_start[2, 0] = episode_start[4, 2] = True
    episode_start[0, 1] = True  # ignored at t = 0: the given state is the first step's (the actor zeroed it)
    with torch.no_grad():
        unrolled = network.unroll(observation, state, episode_start)
        step_state, logits, values = state, [], []
        for t in range(5):
            if t > 0:
                step_state = step_state * (~episode_start[t]).float()[:, None]
            output, step_state = network.step(observation[t], step_state)
            logits.append(output.logits)
            values.append(output.value)
    assert_close(unrolled.logits, torch.stack(logits))
    assert_close(unrolled.value, torch.stack(values))
    # The reset matters: without it env 0's step 2 would differ.
    with torch.no_grad():
        no_reset = network.unroll(observation, state, torch.zeros_like(episode_start))
    assert not torch.allclose(no_reset.logits[2, 0], unrolled.logits[2, 0])
    assert torch.equal(no_reset.logits[:, 1], unrolled.logits[:, 1])  # env 1 starts no episode after t = 0
    with pytest.raises(TypeError, match='recurrent'):
        network(observation[0])


def collect(policy_set, rollout=16, envs=3, rnn=True, episode_steps=5, seed=2):
    env = gym_env.create_classic_vector_env('CartPole-v1', envs, seed=seed, max_episode_steps=episode_steps)
    actor = PolicySetActor(policy_set, env, rollout, GAMMA, False, seed=seed)
    state_size = policy_set.policies[0].state_size if rnn else 0
    spec = policy_set_rollout_spec(env, envs, rollout, state_size=state_size)
    buffers = []
    for _ in range(2):  # the second rollout starts from the state the first one ended with
        buffer = {name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}
        actor.collect(buffer)
        buffers.append(buffer)
    return buffers


@pytest.mark.parametrize('rnn_type', ['gru', 'lstm'])
@pytest.mark.parametrize('recurrence', [16, 4])
def test_learner_chunks_start_from_the_stored_states_so_the_ratio_is_exactly_one(rnn_type, recurrence):
    network = recurrent_network(rnn_type, seed=3, normalize_input=True)
    network.observation_normalizer.update(torch.randn(50, 4))
    learner = make_learner([network], num_epochs=2, num_batches_per_epoch=2, recurrence=recurrence)
    buffers = collect(learner.network)
    first, second = buffers
    assert first['episode_start'][0].all() and first['episode_start'].sum() > first['episode_start'][0].sum()  # 5-step episodes
    assert (first['core_state'][0] == 0).all() and (first['core_state'][1:] != 0).any()
    # The first step of a rollout starts where the previous rollout's bootstrap step did.
    assert torch.equal(second['core_state'][0], first['core_state'][-1])
    assert torch.equal(second['episode_start'][0], first['episode_start'][-1])
    ratios = []
    loss = learner.trainers[0].minibatch_loss
    learner.trainers[0].minibatch_loss = lambda mb: (lambda result: (ratios.append(result[1]['ratio']), result)[1])(loss(mb))
    learner.update(buffers)  # 2 rollouts x 3 envs x 16 steps = 96 samples, minibatches of 48: whole chunks
    assert len(ratios) == 4
    assert_close(ratios[0], torch.ones(48), rtol=0, atol=1e-5)
    assert not torch.allclose(ratios[2], torch.ones(48), atol=1e-5)  # the second epoch follows gradient steps


def test_chunks_that_ignore_the_stored_states_would_not_reproduce_the_behaviour_policy():
    """The test above can fail: unrolling from zero states instead of the stored ones breaks the ratio."""
    network = recurrent_network('gru', seed=4)
    learner = make_learner([network], num_epochs=1, num_batches_per_epoch=1, recurrence=16)
    buffers = collect(learner.network)
    for buffer in buffers:
        buffer['core_state'].zero_()
    ratios = []
    loss = learner.trainers[0].minibatch_loss
    learner.trainers[0].minibatch_loss = lambda mb: (lambda result: (ratios.append(result[1]['ratio']), result)[1])(loss(mb))
    learner.update(buffers)
    assert (ratios[0] - 1).abs().max() > 1e-3


def test_vtrace_targets_unroll_whole_rollouts_from_the_stored_first_state():
    network = recurrent_network('gru', seed=5)
    learner = make_learner([network], with_vtrace=True, recurrence=16)
    (buffer,) = collect(learner.network)[:1]
    advantages, returns = learner.targets({**buffer, 'reward': torch.ones(16, 3)})
    # On-policy (the network that acted): V-trace's v_s are the n-step returns of the rollout's own values.
    with torch.no_grad():
        observations = torch.cat([buffer['observation'], buffer['last_observation'][None]])
        values = network.unroll(observations, buffer['core_state'][0], buffer['episode_start']).value
    assert_close(values[:-1], buffer['value'])
    expected = torch.zeros(16, 3)
    next_return = values[-1]
    for t in reversed(range(16)):
        next_return = 1.0 + buffer['discount'][t] * next_return
        expected[t] = next_return
    assert_close(returns, expected)


def test_gae_bootstraps_from_the_learners_core_stepped_from_the_stored_last_state():
    """Sample Factory recomputes V(x_T) with the learner's network from the core state stored with the last
    observation; the rollout carries no value of the actor for it."""
    network = recurrent_network('lstm', seed=6)
    learner = make_learner([network], gae_lambda=1.0, recurrence=16)
    (buffer,) = collect(learner.network)[:1]
    assert buffer['value'].shape == (16, 3) and (buffer['core_state'][-1] != 0).any()
    with torch.no_grad():
        stepped, _ = network.step(buffer['last_observation'], buffer['core_state'][-1])
        from_zero, _ = network.step(buffer['last_observation'], torch.zeros_like(buffer['core_state'][-1]))
    assert_close(learner.bootstrap_values(buffer), stepped.value)
    assert not torch.allclose(stepped.value, from_zero.value)  # the stored state matters
    advantages, returns = learner.targets({**buffer, 'reward': torch.ones(16, 3)})
    expected = torch.zeros(16, 3)
    next_return = stepped.value
    for t in reversed(range(16)):  # lambda 1: discounted rewards plus the discounted bootstrap value
        next_return = 1.0 + buffer['discount'][t] * next_return
        expected[t] = next_return
    assert_close(returns, expected)


def test_core_settings_take_the_recurrent_settings_and_refuse_what_cannot_work():
    base = AppoSettings(
        use_rnn=True, num_policies=1, rollout=32, num_envs_per_worker=4, num_workers=2, batch_size=256, num_batches_per_epoch=1, num_epochs=4,
        recurrence=-1, async_rl=True, num_batches_to_accumulate=2, max_policy_lag=100, gamma=0.99, train_for_env_steps=0,
        actor_critic_share_weights=True, num_train_steps=1000, num_iterations=1, environment_name='CartPole-v1', save_best_after=0,
    )  # fmt: skip
    assert sample_factory_config.effective_recurrence(base) == 32  # -1: the whole rollout with a core
    assert sample_factory_config.effective_recurrence(base.replace(use_rnn=False)) == 1
    assert base.replace(recurrence=8).core_settings().batch_rollouts == 2
    with pytest.raises(ValueError, match=r'--use_rnn=true takes one policy here \(--num_policies=2\)'):
        base.replace(num_policies=2, batch_size=128).core_settings()
    with pytest.raises(ValueError, match=r'--actor_critic_share_weights=true'):
        base.replace(actor_critic_share_weights=False).core_settings()
    with pytest.raises(ValueError, match=r'--batch_size=48 must be a multiple of --recurrence=32'):
        base.replace(batch_size=48, num_batches_per_epoch=2, num_envs_per_worker=3).core_settings()
    with pytest.raises(ValueError, match=r'--rollout=32 must be a multiple of --recurrence=12'):
        base.replace(recurrence=12).core_settings()


RETURN_LINE = re.compile(r'^APPO on (\S+), checkpoint (\S+): (\d+) episodes, return mean (-?[\d.]+) std', re.M)


@pytest.mark.slow
def test_run_classic_with_a_gru_core_then_eval_agent(tmp_path):
    checkpoint_dir = tmp_path / 'checkpoints'
    proc = run_module(
        'deep_rl_zoo.appo.run_classic', '--noprogress', '--learner_threads=1', f'--checkpoint_dir={checkpoint_dir}', f'--runs_dir={tmp_path}/runs',
        '--environment_name=CartPole-v1', '--num_iterations=1', '--num_train_steps=512', '--num_eval_steps=300', '--seed=2',
        '--num_workers=2', '--num_envs_per_worker=2', '--rollout=16', '--batch_size=64', '--num_batches_per_epoch=1', '--num_epochs=2',
        '--use_rnn', '--rnn_size=16', '--recurrence=8', cwd=str(tmp_path), timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert TRACEBACK not in proc.stderr
    path = os.path.join(checkpoint_dir, 'APPO_CartPole-v1_0.ckpt')
    videos = tmp_path / 'videos'
    proc = run_module('deep_rl_zoo.appo.eval_agent', f'--load_checkpoint_file={path}', '--num_eval_episodes=1', f'--recording_video_dir={videos}', cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = RETURN_LINE.search(proc.stdout)
    assert match and match.group(3) == '1', proc.stdout
    assert [name for name in os.listdir(videos) if name.endswith('.mp4')]
    bad = run_module('deep_rl_zoo.appo.run_classic', '--use_rnn', '--num_policies=2', '--num_iterations=1', cwd=str(tmp_path))
    assert bad.returncode != 0 and stderr_lines(bad)[-1].startswith('error: --use_rnn=true takes one policy here')
