"""PPO-ICM: PPO (Schulman et al. 2017) on game reward plus the curiosity reward of an intrinsic curiosity module
(Pathak et al. 2017, "Curiosity-driven Exploration by Self-supervised Prediction").

PPO's actors and learner (`deep_rl_zoo.ppo`), with these additions in the learner, per batch of rollouts:

1. the module scores every transition (s_t, a_t, s_t+1) of the batch with the parameters that made the rollouts:
   r^i_t = eta / 2 * ||phi_hat(s_t+1) - phi(s_t+1)||^2 (eq. 6); the policy maximises
   r_t = c_e * r^e_t + c_i * r^i_t (eq. 1, `--extrinsic_reward_coef`, `--intrinsic_reward_coef`); with
   `--normalize_intrinsic_reward`, r^i_t is first divided by a running std of its discounted return (Burda et al.
   2019, "Large-Scale Study of Curiosity-Driven Learning", section 2.2), as the module's features, and with them
   its errors, grow during training;
2. advantages, returns and the clipped PPO update as in `ppo.agent`, on r_t;
3. on each PPO minibatch the module takes one Adam step on (1 - beta) L_inverse + beta L_forward (eq. 7, beta 0.2),
   so phi is trained by the inverse model and the forward model predicts phi(s_t+1); with `--noicm_every_epoch`
   on the minibatches of the first epoch only, so on each transition once, as the paper's A3C does.

With `--scale_rewards` the actors divide the game reward by the running std of its discounted return (Engstrom et al.
2020) before the learner adds the curiosity reward (the MountainCar preset does, for its -1 per step).

The rollout's next observation is the following step's observation (or the one after the last step). Where an
episode ended (discount 0) that is the first observation of the next episode, not a successor: those transitions
get no curiosity reward and do not train the module. With `--intrinsic_reward_coef=0` nothing of the module is
built or trained: the update is plain PPO with the same network and hyperparameters (the baseline of docs/exploration.md's
curiosity table).

On Montezuma's Revenge the actors also count the distinct rooms each episode visits (RAM byte 3), logged as
agent statistics `visited_rooms_mean` / `visited_rooms_max`.
"""

from typing import Any

import torch
from torch import nn

from deep_rl_zoo import curiosity, gym_env, main_loop, multistep, policy_gradient, trackers
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.common import bf16_torsos
from deep_rl_zoo.networks.curiosity import icm_for, policy_torsos
from deep_rl_zoo.networks.policy import CategoricalActorCritic
from deep_rl_zoo.ppo.agent import PpoLearner, build_actor, concatenate_rollouts, minibatches, refuse_observation_normalization
from deep_rl_zoo.ppo.agent import learner_arguments as ppo_arguments
from deep_rl_zoo.ppo_icm.settings import PpoIcmSettings
from deep_rl_zoo.rollouts import room_counting_rollout_spec


class PpoIcmLearner(PpoLearner):
    """PPO on game + curiosity reward, and the curiosity module's own updates (see the module docstring)."""

    agent_name = 'PPO_ICM'

    def __init__(
        self,
        network: nn.Module,
        icm: nn.Module | None,
        icm_learning_rate: float,
        icm_every_epoch: bool,
        icm_beta: float,
        icm_eta: float,
        extrinsic_reward_coef: float,
        intrinsic_reward_coef: float,
        intrinsic_reward_normalizer: curiosity.IntrinsicRewardNormalizer | None = None,
        count_rooms: bool = False,
        **ppo_arguments: Any,
    ):
        super().__init__(network, **ppo_arguments)
        if (icm is None) != (intrinsic_reward_coef == 0):
            raise ValueError('an ICM is needed exactly when --intrinsic_reward_coef > 0')
        if intrinsic_reward_normalizer is not None and icm is None:
            raise ValueError('--normalize_intrinsic_reward needs a curiosity reward to normalize: set --intrinsic_reward_coef > 0')
        self.icm = icm.to(self.device) if icm is not None else None
        self.icm_optimizer = torch.optim.Adam(icm.parameters(), lr=icm_learning_rate) if icm is not None else None
        self.icm_every_epoch = icm_every_epoch
        self.icm_beta = icm_beta
        self.icm_eta = icm_eta
        self.extrinsic_reward_coef = extrinsic_reward_coef
        self.intrinsic_reward_coef = intrinsic_reward_coef
        self.intrinsic_reward_normalizer = intrinsic_reward_normalizer
        self.rooms = trackers.RoomStatistics(active=count_rooms)

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        batch = concatenate_rollouts(buffers, self.device)
        self.rooms.record(batch)
        observation, action = batch['observation'], batch['action']
        next_observation = torch.cat([observation[1:], batch['last_observation'][None]])
        continues = batch['discount'] > 0  # the next observation follows within the episode
        intrinsic = torch.zeros_like(batch['reward'])
        if self.icm is not None:
            intrinsic = self.intrinsic_rewards(observation, next_observation, action, continues)
            self.statistics.record(intrinsic_reward=intrinsic.mean(), intrinsic_reward_max=intrinsic.max())
            if self.intrinsic_reward_normalizer is not None:
                intrinsic = self.intrinsic_reward_normalizer(intrinsic.cpu()).to(self.device)
                self.statistics.record(normalized_intrinsic_reward=intrinsic.mean())
        reward = curiosity.mix_rewards(batch['reward'], intrinsic, self.extrinsic_reward_coef, self.intrinsic_reward_coef)
        advantages = multistep.truncated_generalized_advantage_estimation(reward, batch['discount'], self.gae_lambda, batch['value'])
        samples = {
            'observation': observation.flatten(0, 1),
            'next_observation': next_observation.flatten(0, 1),
            'continues': continues.flatten(),
            'action': action.flatten(0, 1),
            'log_prob': batch['log_prob'].flatten(),
            'value': batch['value'][:-1].flatten(),
            'advantage': advantages.flatten(),
            'return': (advantages + batch['value'][:-1]).flatten(),
        }
        clip_epsilon = self.clip_epsilon(self.learner_steps)
        for group in self.optimizer.param_groups:
            group['lr'] = self.learning_rate(self.learner_steps)
        with bf16_torsos(self.bf16_learning):  # the policy's Nature CNN; ICM's encoder has its own convolutions, float32
            for epoch in range(self.num_epochs):
                for indices in minibatches(samples['advantage'].shape[0], self.num_minibatches, self.device):
                    minibatch = {name: value[indices] for name, value in samples.items()}
                    self._minibatch_step(minibatch, clip_epsilon)
                    if self.icm is not None and (epoch == 0 or self.icm_every_epoch):
                        self._icm_step(minibatch)
        self.learner_steps += 1
        self.statistics.record(
            explained_variance=float(policy_gradient.explained_variance(samples['value'], samples['return'])),
            learning_rate=self.learning_rate(self.learner_steps - 1),
            clip_epsilon=clip_epsilon,
        )

    @torch.no_grad()
    def intrinsic_rewards(self, observation: torch.Tensor, next_observation: torch.Tensor, action: torch.Tensor, continues: torch.Tensor) -> torch.Tensor:
        """The curiosity reward [T, N] of each transition of a rollout batch ([T, N, ...] inputs); 0 where the episode
        ended (`continues` False), whose next observation is no successor."""
        scored = self.icm(observation.flatten(0, 1), next_observation.flatten(0, 1), action.flatten(0, 1))
        reward = curiosity.icm_intrinsic_reward(scored.predicted_features, scored.next_features, self.icm_eta)
        return reward.view_as(continues) * continues

    def _icm_step(self, minibatch: dict[str, torch.Tensor]) -> None:
        """One Adam step of the module on the minibatch's transitions that stay within an episode (eq. 7)."""
        keep = minibatch['continues']
        if not keep.any():
            return
        action = minibatch['action'][keep]
        output = self.icm(minibatch['observation'][keep], minibatch['next_observation'][keep], action)
        inverse_loss = curiosity.icm_inverse_loss(output.action_logits, action)
        forward_loss = curiosity.icm_forward_loss(output.predicted_features, output.next_features)
        loss = curiosity.icm_loss(inverse_loss, forward_loss, self.icm_beta)
        self.icm_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(self.icm.parameters(), self.max_grad_norm)
        self.icm_optimizer.step()
        accuracy = (output.action_logits.argmax(dim=1) == action).float().mean()
        self.statistics.record(icm_inverse_loss=inverse_loss.mean().detach(), icm_forward_loss=forward_loss.mean().detach(), icm_inverse_accuracy=accuracy)

    def agent_statistics(self) -> dict[str, float]:
        return self.rooms.statistics()

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        if self.icm is not None:
            state.update(icm=self.icm.state_dict(), icm_optimizer=self.icm_optimizer.state_dict())
        if self.intrinsic_reward_normalizer is not None:
            state.update(intrinsic_reward_normalizer=self.intrinsic_reward_normalizer.state_dict())
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        if self.icm is not None:
            self.icm.load_state_dict(state['icm'])
            self.icm_optimizer.load_state_dict(state['icm_optimizer'])
        if self.intrinsic_reward_normalizer is not None:
            if 'intrinsic_reward_normalizer' not in state:
                raise ValueError(
                    'the checkpoint was trained without --normalize_intrinsic_reward (which the Pong preset turns on); '
                    'resume it with --nonormalize_intrinsic_reward'
                )
            self.intrinsic_reward_normalizer.load_state_dict(state['intrinsic_reward_normalizer'])


def make_network(env: VectorEnvironment, settings: PpoIcmSettings) -> CategoricalActorCritic:
    """PPO's actor-critic for the run's kind of environment: Nature CNN (Atari), the MiniGrid CNN, tanh MLPs."""
    if env.single_action_space.shape:
        raise ValueError('PPO-ICM takes discrete actions only; for continuous control use deep_rl_zoo.ppo.run_continuous')
    refuse_observation_normalization(settings, "PPO-ICM's network")
    torso, value_torso = policy_torsos(settings.environment_kind, env.single_observation_space)
    return CategoricalActorCritic(torso, int(env.single_action_space.n), value_torso)


def build_learner(network: nn.Module, env: VectorEnvironment, settings: PpoIcmSettings, total_updates: int, device: torch.device) -> PpoIcmLearner:
    """A PPO-ICM learner from the run's `settings`, its ICM shaped by `env`'s spaces."""
    icm = None
    if settings.intrinsic_reward_coef > 0:
        icm = icm_for(settings.environment_kind, env.single_observation_space, int(env.single_action_space.n))
    normalizer = None
    if settings.normalize_intrinsic_reward:
        normalizer = curiosity.IntrinsicRewardNormalizer(settings.num_actors * settings.num_envs_per_actor, settings.discount)
    return PpoIcmLearner(
        network,
        icm,
        icm_learning_rate=settings.icm_learning_rate,
        icm_every_epoch=settings.icm_every_epoch,
        icm_beta=settings.icm_beta,
        icm_eta=settings.icm_eta,
        extrinsic_reward_coef=settings.extrinsic_reward_coef,
        intrinsic_reward_coef=settings.intrinsic_reward_coef,
        intrinsic_reward_normalizer=normalizer,
        count_rooms=gym_env.is_montezuma_revenge(settings.environment_kind, settings.environment_name),
        **ppo_arguments(settings, total_updates, device),
    )


def train(run_settings: PpoIcmSettings) -> None:
    """Entry point of PPO-ICM's run scripts: actors, learner and iterations from the run's settings (run_classic
    also takes MiniGrid tasks, whose kind the settings name 'minigrid')."""
    main_loop.train_actors_and_learner(run_settings, make_network, build_learner, build_actor, room_counting_rollout_spec, count_rooms=True)
