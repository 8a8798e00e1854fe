"""IMPALA: "Scalable Distributed Deep-RL with Importance Weighted Actor-Learner Architectures" (Espeholt et al. 2018).

Actor processes never wait for the learner (the asynchronous mode of `main_loop.run_actors_and_learner`): each
samples its current copy of the policy mu for `unroll_length` steps of a vector of environments, writes the
rollout with the log-probabilities mu(a|x) of its actions, and picks up the newest parameters between rollouts.
By the time the learner trains on a rollout its policy pi has moved on, and V-trace corrects for that lag. For
each batch of `batch_rollouts` rollouts the learner

1. computes, with its own current network, log pi(a_s|x_s), V(x_s) and the bootstrap value V(x_T);
2. computes the V-trace targets v_s and advantages (section 4.1, eq. 1; `deep_rl_zoo.vtrace`) from the importance
   ratios rho_s = pi(a_s|x_s) / mu(a_s|x_s), clipped at rho-bar (TD errors), c-bar (traces) and rho-bar_pg
   (policy gradient);
3. takes one gradient step on the loss of section 4.2, summed over the T x B samples,

       L = -min(rho-bar_pg, rho_s) (r_s + gamma v_{s+1} - V(x_s)) log pi(a_s|x_s)      (policy gradient)
           + c_v 0.5 (v_s - V(x_s))^2                                                 (value regression to v_s)
           - c_e H[pi(.|x_s)]                                                          (entropy bonus)

   with the global gradient norm clipped and RMSProp (as in the paper) or Adam, the learning rate decayed linearly
   to 0 over the run. The sum is the paper's reduction (its scalable_agent sums all three terms, as TorchBeast
   does): the paper's learning rate, RMSProp epsilon and gradient clip 40 were tuned for it, and a mean would make
   every gradient T x B times smaller: the clip would never act and epsilon would dominate the denominator.

Networks: the paper's shallow Nature CNN torso or its deep residual torso (`--torso=impala_resnet`) with policy and
value heads on top for Atari; tanh MLPs for vector observations. A time-limit truncation is bootstrapped by the
actor (gamma * V(final observation) added to the last reward, Pardo et al. 2018).

`--bf16_learning` runs the learner's Nature CNN torso under bfloat16 autocast (`networks.common.bf16_torsos`); heads,
LSTM, V-trace, loss and optimizer stay float32, and so do the actors and the deep residual torso.

`--replay_proportion=p` adds p replayed rollouts per new one to every batch (the paper's V-trace analysis compares
the off-policy corrections with and without such a replay; RLlib's option of the same name), drawn uniformly from
the newest `--replay_rollouts` the learner has trained on, so each sample is learned from 1 + p times on average.
Their behaviour policy mu is older, and V-trace corrects for it as for the actors' lag. The replay is the learner's
memory and is not saved in checkpoints.

`--use_lstm` adds the paper's LSTM core (256 units; `networks.policy.RecurrentActorCritic`): the torso's output, the
one-hot previous action and the clipped previous reward feed the LSTM, whose output feeds both heads; its state is
zeroed at episode starts. Actors carry the state across rollouts and store the state each rollout starts from; the
learner unrolls the core from it over the T steps and the bootstrap step, and the V-trace loss is the same.
"""

import collections

import torch
from torch import nn

from deep_rl_zoo import main_loop, trackers, vtrace
from deep_rl_zoo.greedy_actors import RecurrentPolicyGreedyActor
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.impala.settings import ImpalaSettings
from deep_rl_zoo.networks.common import ImpalaResNetTorso, NatureCnnTorso, bf16_torsos
from deep_rl_zoo.networks.policy import CategoricalActorCritic, RecurrentActorCritic, actor_critic_for, recurrent_actor_critic_for
from deep_rl_zoo.rollouts import OnPolicyActor, RecurrentOnPolicyActor, bootstrapped_rollout_spec, recurrent_rollout_spec
from deep_rl_zoo.schedule import LinearSchedule
from deep_rl_zoo.types import OneOptimizerLearner, rmsprop_or_adam

BATCH_FIELDS = ('observation', 'last_observation', 'action', 'log_prob', 'reward', 'discount')  # what the loss reads
RECURRENT_FIELDS = ('core_h', 'core_c', 'prev_action', 'prev_reward', 'episode_start')  # and with --use_lstm
PER_ENVIRONMENT_FIELDS = ('last_observation', 'core_h', 'core_c')  # [N, ...]; the other fields are [T (+ 1), N, ...]
CORE_SIZE = 256  # LSTM units of --use_lstm (the paper's)


class RolloutReplay:
    """The newest `capacity` rollouts, copied out of the actors' buffers, drawn uniformly without replacement."""

    def __init__(self, capacity: int, seed: int):
        self.rollouts: collections.deque[dict[str, torch.Tensor]] = collections.deque(maxlen=capacity)  # drops the oldest
        self._generator = torch.Generator().manual_seed(seed)

    def add(self, rollout: dict[str, torch.Tensor]) -> None:
        self.rollouts.append({name: tensor.clone() for name, tensor in rollout.items()})  # the actors' buffers are reused

    def sample(self, count: int) -> list[dict[str, torch.Tensor]]:
        """`count` distinct rollouts (fewer while the replay holds fewer)."""
        picks = torch.randperm(len(self.rollouts), generator=self._generator)[:count]
        return [self.rollouts[index] for index in picks.tolist()]


class ImpalaLearner(OneOptimizerLearner):
    """One V-trace actor-critic gradient step per batch of rollouts (see the module docstring)."""

    agent_name = 'IMPALA'

    def __init__(
        self,
        network: nn.Module,
        learning_rate: float,
        entropy_coef: float,
        value_coef: float,
        max_grad_norm: float,
        total_updates: int,
        anneal_learning_rate: bool,
        clip_rho_threshold: float | None = 1.0,
        clip_pg_rho_threshold: float | None = 1.0,
        clip_c_threshold: float | None = 1.0,
        vtrace_lambda: float = 1.0,
        optimizer: str = 'rmsprop',
        rmsprop_alpha: float = 0.99,
        optimizer_eps: float = 0.01,
        bf16_learning: bool = False,
        replay_proportion: float = 0.0,
        replay_rollouts: int = 100,
        seed: int = 0,
        device: torch.device = torch.device('cpu'),
    ):
        self.network = network.to(device)
        self.replay_proportion = replay_proportion
        # Not `replay`: that name is the replay agents' memory, which the experiment saves with --save_replay.
        self.rollout_replay = RolloutReplay(replay_rollouts, seed) if replay_proportion > 0 else None
        self._replay_credit = 0.0  # replayed rollouts owed: fractional proportions come out exact over updates
        self.optimizer = rmsprop_or_adam(network, optimizer, learning_rate, rmsprop_alpha, optimizer_eps)
        self.entropy_coef = entropy_coef
        self.value_coef = value_coef
        self.max_grad_norm = max_grad_norm
        self.clip_thresholds = dict(clip_rho_threshold=clip_rho_threshold, clip_pg_rho_threshold=clip_pg_rho_threshold, clip_c_threshold=clip_c_threshold)
        self.vtrace_lambda = vtrace_lambda
        self.bf16_learning = bf16_learning
        self.device = device
        self.learning_rate = LinearSchedule(learning_rate, 0.0 if anneal_learning_rate else learning_rate, total_updates)
        self.learner_steps = 0  # gradient steps, one per batch of rollouts
        self.statistics = trackers.LearnerStatistics()

    def evaluate(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The learner's current logits [T, B, A], values V(x_s) [T, B] and bootstrap values V(x_T) [B] on `batch`."""
        num_steps, batch_size = batch['reward'].shape
        observations = (batch['observation'], batch['last_observation'][None])
        if isinstance(self.network, RecurrentActorCritic):
            # The LSTM core unrolled over the T steps and the bootstrap step from the state the actor started from.
            output = self.network(
                torch.cat(observations), batch['prev_action'], batch['prev_reward'], batch['episode_start'], (batch['core_h'], batch['core_c'])
            )
            return output.logits[:num_steps], output.value[:num_steps], output.value[num_steps]
        # One forward pass over every observation and the observations after the last steps.
        output = self.network(torch.cat([observation.flatten(0, 1) for observation in observations]))
        logits, values = output.logits.view(num_steps + 1, batch_size, -1), output.value.view(num_steps + 1, batch_size)
        return logits[:num_steps], values[:num_steps], values[num_steps]

    def loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss summed over the T x B samples of `batch` (steps 1-3 of the module docstring), and its parts as
        means per sample (so the logs read the same at any batch size)."""
        logits, values, bootstrap_value = self.evaluate(batch)
        distribution = torch.distributions.Categorical(logits=logits, validate_args=False)
        log_prob = distribution.log_prob(batch['action'])
        log_rhos = log_prob.detach() - batch['log_prob']
        targets = vtrace.vtrace(
            log_rhos, batch['discount'], batch['reward'], values.detach(), bootstrap_value.detach(), **self.clip_thresholds, lambda_=self.vtrace_lambda
        )
        policy_loss = -(targets.pg_advantages * log_prob).sum()
        value_loss = 0.5 * ((targets.vs - values) ** 2).sum()
        entropy = distribution.entropy().sum()
        loss = policy_loss + self.value_coef * value_loss - self.entropy_coef * entropy
        num_samples = log_prob.numel()
        rhos = log_rhos.exp()
        statistics = {
            'policy_loss': policy_loss.detach() / num_samples,
            'value_loss': value_loss.detach() / num_samples,
            'entropy': entropy.detach() / num_samples,
            'importance_weight_mean': rhos.mean(),
            'importance_weight_clipped_fraction': (rhos > (self.clip_thresholds['clip_rho_threshold'] or float('inf'))).float().mean(),
        }
        return loss, statistics

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        """One gradient step on every sample of `buffers` (rollouts [T, N_actor, ...] in arrival order) and, with
        --replay_proportion, of the replayed rollouts drawn for them."""
        fields = BATCH_FIELDS + (RECURRENT_FIELDS if isinstance(self.network, RecurrentActorCritic) else ())
        rollouts = [{name: buffer[name] for name in fields} for buffer in buffers]
        replayed: list[dict[str, torch.Tensor]] = []
        if self.rollout_replay is not None:
            self._replay_credit += self.replay_proportion * len(rollouts)
            replayed = self.rollout_replay.sample(int(self._replay_credit))
            self._replay_credit -= int(self._replay_credit)
        batch = {
            name: torch.cat([rollout[name] for rollout in rollouts + replayed], dim=0 if name in PER_ENVIRONMENT_FIELDS else 1).to(self.device)
            for name in fields
        }
        with bf16_torsos(self.bf16_learning):
            loss, statistics = self.loss(batch)
        for group in self.optimizer.param_groups:
            group['lr'] = self.learning_rate(self.learner_steps)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.network.parameters(), self.max_grad_norm if self.max_grad_norm > 0 else float('inf'))
        self.optimizer.step()
        self.learner_steps += 1
        self.statistics.record(**statistics, grad_norm=grad_norm, learning_rate=self.learning_rate(self.learner_steps - 1))
        if self.rollout_replay is not None:
            for rollout in rollouts:
                self.rollout_replay.add(rollout)
            self.statistics.record(replayed_rollouts=float(len(replayed)))


def _threshold(value: float) -> float | None:
    """A clip threshold flag: 0 means no clipping."""
    return value if value > 0 else None


def build_learner(network: nn.Module, env: VectorEnvironment, settings: ImpalaSettings, total_updates: int, device: torch.device) -> ImpalaLearner:
    """An IMPALA learner from the run's `settings`."""
    return ImpalaLearner(
        network,
        learning_rate=settings.learning_rate,
        entropy_coef=settings.entropy_coef,
        value_coef=settings.value_coef,
        max_grad_norm=settings.max_grad_norm,
        total_updates=total_updates,
        anneal_learning_rate=settings.anneal_learning_rate,
        clip_rho_threshold=_threshold(settings.clip_rho_threshold),
        clip_pg_rho_threshold=_threshold(settings.clip_pg_rho_threshold),
        clip_c_threshold=_threshold(settings.clip_c_threshold),
        vtrace_lambda=settings.vtrace_lambda,
        optimizer=settings.optimizer,
        rmsprop_alpha=settings.rmsprop_alpha,
        optimizer_eps=settings.optimizer_eps,
        bf16_learning=settings.bf16_learning,
        replay_proportion=settings.replay_proportion,
        replay_rollouts=settings.replay_rollouts,
        seed=settings.seed,
        device=device,
    )


def build_actor(network: nn.Module, env: VectorEnvironment, settings: ImpalaSettings, seed: int, device: torch.device) -> OnPolicyActor:
    """An actor sampling its copy of the policy (the behaviour policy mu), from the run's `settings`; with the LSTM
    core it carries the core state across steps and rollouts."""
    actor_class = RecurrentOnPolicyActor if isinstance(network, RecurrentActorCritic) else OnPolicyActor
    return actor_class(network, env, settings.unroll_length, settings.discount, settings.life_loss_is_terminal, seed, device)


def make_network(env: VectorEnvironment, settings: ImpalaSettings) -> CategoricalActorCritic | RecurrentActorCritic:
    """Atari: the Nature CNN (`--torso=nature`) or the deep residual network (`--torso=impala_resnet`) under both
    heads; vector observations: separate tanh MLPs. `--use_lstm`: the network with the paper's LSTM core instead."""
    if settings.use_lstm:
        return make_recurrent_network(env, settings)
    network = actor_critic_for(env, 'IMPALA')
    if not isinstance(network.torso, NatureCnnTorso):
        refuse_torso_for_vectors(settings, env.single_observation_space.shape)
        return network
    if settings.torso == 'impala_resnet':
        frame_stack, frame_size = env.single_observation_space.shape[:2]
        network = CategoricalActorCritic(ImpalaResNetTorso(frame_stack, frame_size), int(env.single_action_space.n))
    return network


def refuse_torso_for_vectors(settings: ImpalaSettings, observation_shape: tuple[int, ...]) -> None:
    """--torso is a flag of Atari runs (their frames): settings of one refuse vector observations in one line."""
    if settings.environment_kind == 'atari':
        raise ValueError(f'--torso applies to Atari frames only, got observations of shape {observation_shape}')


def make_recurrent_network(env: VectorEnvironment, settings: ImpalaSettings) -> RecurrentActorCritic:
    """`--use_lstm`: one torso (the `--torso` CNN for Atari, a tanh MLP for vectors) whose output, with the one-hot
    previous action and the clipped previous reward, feeds an LSTM core of CORE_SIZE units under both heads."""
    observation_shape = env.single_observation_space.shape
    if len(observation_shape) != 3:
        refuse_torso_for_vectors(settings, observation_shape)
        return recurrent_actor_critic_for(env, 'IMPALA', core_size=CORE_SIZE)
    frame_stack, frame_size = observation_shape[:2]
    if settings.torso == 'impala_resnet':
        torso: nn.Module = ImpalaResNetTorso(frame_stack, frame_size)
    else:
        torso = NatureCnnTorso(frame_stack, frame_size)
    return recurrent_actor_critic_for(env, 'IMPALA', torso=torso, core_size=CORE_SIZE)


def train(run_settings: ImpalaSettings) -> None:
    """Entry point of IMPALA's run scripts: asynchronous actors, learner and iterations from the run's settings."""
    spec = recurrent_rollout_spec(CORE_SIZE) if run_settings.use_lstm else bootstrapped_rollout_spec
    eval_actor = RecurrentPolicyGreedyActor if run_settings.use_lstm else None  # the default: PolicyGreedyActor
    main_loop.train_actors_and_learner(run_settings, make_network, build_learner, build_actor, spec, asynchronous=True, make_eval_actor=eval_actor)
