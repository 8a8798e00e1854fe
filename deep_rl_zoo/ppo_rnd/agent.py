"""PPO-RND: PPO (Schulman et al. 2017) with the exploration bonus of random network distillation (Burda et al. 2018,
"Exploration by Random Network Distillation").

PPO's actors and learner (`deep_rl_zoo.ppo`), with these additions in the learner, per batch of rollouts:

1. intrinsic reward of each step: the predictor's error on the next observation, ||f_hat(x_t+1) - f(x_t+1)||^2
   (section 2.2), divided by a running std of the intrinsic return (section 2.4), which, like the intrinsic value,
   is non-episodic: it runs on through game overs (section 2.3). The next observation is the following step's (the
   first of a new episode after a game over, as the stream of observations runs on);
2. two value heads: extrinsic, episodic, discount `--discount` (0.999 in the paper); intrinsic, non-episodic,
   `--intrinsic_discount` (0.99). The intrinsic values of the batch are computed by the learner with the
   parameters that made the rollouts (the actors wait for every update, so they are the same);
3. the policy follows A = 2 A_ext + 1 A_int (section 2.3); both heads are trained on their own GAE returns;
4. on each PPO minibatch the predictor takes one Adam step on a random `--rnd_update_proportion` of it (only those
   samples go through RND's networks);
5. observations are normalised for RND by running per-element mean and std, clipped to [-5, 5], first gathered
   over `--rnd_init_steps` random-action steps (section 2.4), then updated with every batch after its update.

On Montezuma's Revenge the actors count the distinct rooms each episode visits (`gym_env.RoomCounter`).
"""

from typing import Any

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import curiosity, gym_env, main_loop, multistep, policy_gradient, trackers
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.common import bf16_torsos
from deep_rl_zoo.networks.curiosity import RandomNetworkDistillation, TwoValueActorCritic, policy_torsos, rnd_for
from deep_rl_zoo.ppo.agent import PpoLearner, build_actor, concatenate_rollouts, minibatches, refuse_observation_normalization
from deep_rl_zoo.ppo.agent import learner_arguments as ppo_arguments
from deep_rl_zoo.ppo_rnd.settings import PpoRndSettings
from deep_rl_zoo.rollouts import room_counting_rollout_spec

RND_INIT_SEED_OFFSET = 20_000  # the random steps that initialise the normaliser play their own environments


class PpoRndLearner(PpoLearner):
    """PPO on the combined extrinsic and intrinsic advantage, and the predictor's updates (see the module docstring)."""

    agent_name = 'PPO_RND'

    def __init__(
        self,
        network: nn.Module,
        rnd: RandomNetworkDistillation,
        num_envs: int,
        intrinsic_discount: float,
        extrinsic_advantage_coef: float,
        intrinsic_advantage_coef: float,
        rnd_update_proportion: float,
        rnd_learning_rate: float,
        count_rooms: bool = False,
        **ppo_arguments: Any,
    ):
        super().__init__(network, **ppo_arguments)
        self.rnd = rnd.to(self.device)
        # The predictor's own Adam, at the policy's initial learning rate and not annealed.
        self.rnd_optimizer = torch.optim.Adam(self.rnd.predictor.parameters(), lr=rnd_learning_rate, eps=1e-5)
        self.intrinsic_discount = intrinsic_discount
        self.extrinsic_advantage_coef = extrinsic_advantage_coef
        self.intrinsic_advantage_coef = intrinsic_advantage_coef
        self.rnd_update_proportion = rnd_update_proportion
        self.reward_normalizer = curiosity.IntrinsicRewardNormalizer(num_envs, intrinsic_discount)
        self.rooms = trackers.RoomStatistics(active=count_rooms)

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        batch = concatenate_rollouts(buffers, self.device)
        self.rooms.record(batch)
        num_steps, num_envs = batch['reward'].shape
        observations = torch.cat([batch['observation'], batch['last_observation'][None]])  # x_0 ... x_T
        with torch.no_grad():
            intrinsic_values = self.network(observations.flatten(0, 1)).intrinsic_value.view(num_steps + 1, num_envs)
            prediction, target = self.rnd(observations[1:].flatten(0, 1))
            error = curiosity.rnd_prediction_error(prediction, target).view(num_steps, num_envs)
        intrinsic_reward = self.reward_normalizer(error.cpu()).to(self.device)
        extrinsic_advantages = multistep.truncated_generalized_advantage_estimation(batch['reward'], batch['discount'], self.gae_lambda, batch['value'])
        intrinsic_advantages = curiosity.non_episodic_advantages(intrinsic_reward, intrinsic_values, self.intrinsic_discount, self.gae_lambda)
        advantages = curiosity.combined_advantage(extrinsic_advantages, intrinsic_advantages, self.extrinsic_advantage_coef, self.intrinsic_advantage_coef)
        samples = {
            'observation': batch['observation'].flatten(0, 1),
            'next_observation': observations[1:].flatten(0, 1),
            'action': batch['action'].flatten(0, 1),
            'log_prob': batch['log_prob'].flatten(),
            'value': batch['value'][:-1].flatten(),
            'intrinsic_value': intrinsic_values[:-1].flatten(),
            'advantage': advantages.flatten(),
            'return': (extrinsic_advantages + batch['value'][:-1]).flatten(),
            'intrinsic_return': (intrinsic_advantages + intrinsic_values[:-1]).flatten(),
        }
        clip_epsilon = self.clip_epsilon(self.learner_steps)
        for group in self.optimizer.param_groups:
            group['lr'] = self.learning_rate(self.learner_steps)
        with bf16_torsos(self.bf16_learning):  # the policy's Nature CNN; RND's networks have their own convolutions, float32
            for _ in range(self.num_epochs):
                for indices in minibatches(samples['advantage'].shape[0], self.num_minibatches, self.device):
                    minibatch = {name: value[indices] for name, value in samples.items()}
                    self._minibatch_step(minibatch, clip_epsilon)
                    self._predictor_step(minibatch['next_observation'])
        # After the epochs, so that the rewards above were scored with the statistics of the rollouts' time.
        self.rnd.observation_normalizer.update(self.rnd.flat_inputs(samples['next_observation']))
        self.learner_steps += 1
        self.statistics.record(
            explained_variance=float(policy_gradient.explained_variance(samples['value'], samples['return'])),
            intrinsic_explained_variance=float(policy_gradient.explained_variance(samples['intrinsic_value'], samples['intrinsic_return'])),
            intrinsic_reward=intrinsic_reward.mean(),
            extrinsic_advantage_std=extrinsic_advantages.std(),
            intrinsic_advantage_std=intrinsic_advantages.std(),
            rnd_error=error.mean(),
            learning_rate=self.learning_rate(self.learner_steps - 1),
            clip_epsilon=clip_epsilon,
        )

    def _minibatch_step(self, minibatch: dict[str, torch.Tensor], clip_epsilon: float) -> None:
        """PPO's step with a value loss for each head: L = L_clip + c_v (L_V_ext + L_V_int) - c_e H."""
        output = self.network(minibatch['observation'])
        policy_loss, entropy, log_prob = self._policy_terms(output, minibatch, clip_epsilon)
        value_clip = clip_epsilon if self.clip_value else None
        extrinsic_value_loss = policy_gradient.clipped_value_loss(output.value, minibatch['value'], minibatch['return'], value_clip).mean()
        intrinsic_value_loss = policy_gradient.clipped_value_loss(
            output.intrinsic_value, minibatch['intrinsic_value'], minibatch['intrinsic_return'], value_clip
        ).mean()
        self._optimize(policy_loss + self.value_coef * (extrinsic_value_loss + intrinsic_value_loss) - self.entropy_coef * entropy)
        self.statistics.record(
            policy_loss=policy_loss.detach(),
            value_loss=extrinsic_value_loss.detach(),
            intrinsic_value_loss=intrinsic_value_loss.detach(),
            entropy=entropy.detach(),
            approx_kl=policy_gradient.approx_kl(log_prob, minibatch['log_prob']),
            clip_fraction=policy_gradient.clip_fraction(log_prob, minibatch['log_prob'], clip_epsilon),
        )

    def _predictor_step(self, next_observation: torch.Tensor) -> None:
        """One Adam step of the predictor on a random `rnd_update_proportion` of the minibatch (section 3.6): the mean
        error of the drawn samples, which alone go through the networks (none drawn: a step with zero gradients)."""
        drawn = torch.rand(next_observation.shape[0], device=next_observation.device) < self.rnd_update_proportion
        prediction, target = self.rnd(next_observation[drawn])
        loss = curiosity.rnd_prediction_error(prediction, target).sum() / drawn.sum().clamp(min=1)
        self.rnd_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.rnd_optimizer.step()
        self.statistics.record(rnd_loss=loss.detach())

    def agent_statistics(self) -> dict[str, float]:
        return self.rooms.statistics()

    def state_dict(self) -> dict[str, Any]:
        return {
            **super().state_dict(),
            'rnd': self.rnd.state_dict(),
            'rnd_optimizer': self.rnd_optimizer.state_dict(),
            'intrinsic_reward_normalizer': self.reward_normalizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.rnd.load_state_dict(state['rnd'])
        self.rnd_optimizer.load_state_dict(state['rnd_optimizer'])
        self.reward_normalizer.load_state_dict(state['intrinsic_reward_normalizer'])


def initialize_observation_normalizer(rnd: RandomNetworkDistillation, env: VectorEnvironment, num_steps: int, seed: int) -> None:
    """Folds the observations of `num_steps` uniformly random actions in `env` (all environments together) into
    RND's observation normaliser (Burda et al. 2018, section 2.4)."""
    random = np.random.default_rng(seed)
    env.reset()
    seen, pending = 0, []
    while seen < num_steps:
        step = env.step(random.integers(env.single_action_space.n, size=env.num_envs))
        pending.append(torch.from_numpy(np.asarray(step.observation)))
        seen += env.num_envs
        if len(pending) * env.num_envs >= 1024 or seen >= num_steps:
            rnd.observation_normalizer.update(rnd.flat_inputs(torch.cat(pending)))
            pending = []


def make_network(env: VectorEnvironment, settings: PpoRndSettings) -> TwoValueActorCritic:
    """The actor-critic with extrinsic and intrinsic value heads for the run's kind of environment."""
    if env.single_action_space.shape:
        raise ValueError('PPO-RND takes discrete actions only; for continuous control use deep_rl_zoo.ppo.run_continuous')
    refuse_observation_normalization(settings, "PPO-RND's network")
    torso, value_torso = policy_torsos(settings.environment_kind, env.single_observation_space)
    return TwoValueActorCritic(torso, int(env.single_action_space.n), value_torso)


def build_learner(network: nn.Module, env: VectorEnvironment, settings: PpoRndSettings, total_updates: int, device: torch.device) -> PpoRndLearner:
    """A PPO-RND learner from the run's `settings`: RND shaped by `env`'s observation space, its normaliser
    initialised in environments of its own."""
    seed = settings.seed + RND_INIT_SEED_OFFSET
    rnd = rnd_for(settings.environment_kind, env.single_observation_space.shape)
    normalizer_env = main_loop.create_environment(settings, settings.num_envs_per_actor, seed)
    initialize_observation_normalizer(rnd, normalizer_env, settings.rnd_init_steps, seed)
    normalizer_env.close()
    return PpoRndLearner(
        network,
        rnd,
        num_envs=settings.num_actors * settings.num_envs_per_actor,
        intrinsic_discount=settings.intrinsic_discount,
        extrinsic_advantage_coef=settings.extrinsic_advantage_coef,
        intrinsic_advantage_coef=settings.intrinsic_advantage_coef,
        rnd_update_proportion=settings.rnd_update_proportion,
        rnd_learning_rate=settings.learning_rate,
        count_rooms=gym_env.is_montezuma_revenge(settings.environment_kind, settings.environment_name),
        **ppo_arguments(settings, total_updates, device),
    )


def train(run_settings: PpoRndSettings) -> None:
    """Entry point of PPO-RND's run scripts: actors, learner and iterations from the run's settings (run_classic
    also takes MiniGrid tasks, whose kind the settings name 'minigrid')."""
    main_loop.train_actors_and_learner(run_settings, make_network, build_learner, build_actor, room_counting_rollout_spec, count_rooms=True)
