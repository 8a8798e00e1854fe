"""Q-value networks: a torso followed by a head. Calling any of them returns Q-values [B, A] (distributional
ones their expectation), so acting and evaluation treat them alike; the distributional ones also expose their
distributions (`logits`, `quantiles`, `quantile_values`), the recurrent one takes and returns an LSTM state."""

import torch
from torch import nn

from deep_rl_zoo.networks.common import MlpTorso, NatureCnnTorso, bf16_hidden_layers, fold_time


class QNetwork(nn.Module):
    """Q(s, .) = head(torso(s)): one value per discrete action (Mnih et al. 2015)."""

    def __init__(self, torso: nn.Module, num_actions: int):
        super().__init__()
        if num_actions < 1:
            raise ValueError(f'num_actions must be >= 1, got {num_actions}')
        self.torso = torso
        self.head = nn.Linear(torso.output_size, num_actions)
        self.num_actions = num_actions

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.head(self.torso(observation))


def mlp_q_network(observation_size: int, num_actions: int, hidden_sizes=(128, 128)) -> QNetwork:
    """The Q network for classic control."""
    return QNetwork(MlpTorso(observation_size, hidden_sizes), num_actions)


def nature_cnn_q_network(num_actions: int, frame_stack: int = 4) -> QNetwork:
    """The Nature DQN network for Atari."""
    return QNetwork(NatureCnnTorso(frame_stack), num_actions)


def quantile_midpoints(num_quantiles: int) -> torch.Tensor:
    """QR-DQN's fixed quantile fractions tau_i = (2i + 1) / (2N), i = 0..N-1: the midpoints of N intervals of
    equal probability, where the quantile projection is exact in Wasserstein-1 (Dabney et al. 2017, Lemma 2)."""
    if num_quantiles < 1:
        raise ValueError(f'num_quantiles must be >= 1, got {num_quantiles}')
    return (2 * torch.arange(num_quantiles, dtype=torch.float32) + 1) / (2 * num_quantiles)


class QuantileQNetwork(nn.Module):
    """QR-DQN (Dabney et al. 2017): N quantile values theta_i(s, a) per action at fixed fractions `taus`;
    calling it returns Q(s, a) = mean_i theta_i(s, a), so acting and evaluation treat it as any Q network."""

    def __init__(self, torso: nn.Module, num_actions: int, num_quantiles: int):
        super().__init__()
        if num_actions < 1:
            raise ValueError(f'num_actions must be >= 1, got {num_actions}')
        self.register_buffer('taus', quantile_midpoints(num_quantiles), persistent=False)
        self.torso = torso
        self.head = nn.Linear(torso.output_size, num_quantiles * num_actions)
        self.num_actions = num_actions
        self.num_quantiles = num_quantiles

    def quantiles(self, observation: torch.Tensor) -> torch.Tensor:
        """Quantile values [B, N, A] (quantiles first, actions last) at the fractions `self.taus` [N]."""
        return self.head(self.torso(observation)).view(-1, self.num_quantiles, self.num_actions)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.quantiles(observation).mean(dim=1)


def mlp_quantile_q_network(observation_size: int, num_actions: int, num_quantiles: int, hidden_sizes=(128, 128)) -> QuantileQNetwork:
    """The QR-DQN network for classic control."""
    return QuantileQNetwork(MlpTorso(observation_size, hidden_sizes), num_actions, num_quantiles)


def nature_cnn_quantile_q_network(num_actions: int, num_quantiles: int, frame_stack: int = 4) -> QuantileQNetwork:
    """The QR-DQN network for Atari: Nature DQN with N outputs per action."""
    return QuantileQNetwork(NatureCnnTorso(frame_stack), num_actions, num_quantiles)


def cosine_features(taus: torch.Tensor, num_cosines: int) -> torch.Tensor:
    """cos(pi * i * tau) for i = 0..n-1: the [..., n] basis of IQN's tau embedding (Dabney et al. 2018, eq. 4)."""
    if num_cosines < 1:
        raise ValueError(f'num_cosines must be >= 1, got {num_cosines}')
    frequencies = torch.pi * torch.arange(num_cosines, dtype=taus.dtype, device=taus.device)
    return torch.cos(taus.unsqueeze(-1) * frequencies)


class CosineTauEmbedding(nn.Module):
    """phi_j(tau) = ReLU(sum_{i=0}^{n-1} cos(pi i tau) w_ij + b_j) (Dabney et al. 2018, eq. 4): [..., embedding_size]."""

    def __init__(self, num_cosines: int, embedding_size: int):
        super().__init__()
        self.num_cosines = num_cosines
        self.linear = nn.Linear(num_cosines, embedding_size)

    def forward(self, taus: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(cosine_features(taus, self.num_cosines)))


class ImplicitQuantileNetwork(nn.Module):
    """IQN (Dabney et al. 2018, section 3): Z_tau(s, a) = f(psi(s) * phi(tau))_a for any fraction tau in [0, 1].

    psi is the torso (the state embedding), phi the cosine tau embedding of the same size, * the elementwise
    product and f the head (a hidden ReLU layer and a linear output per action). Calling it returns
    Q(s, a) = mean over K = `tau_samples_policy` fresh taus ~ U[0, 1] per state, the paper's policy. On the Nature
    CNN, f's hidden layer runs once per (state, tau) pair and is most of a learner's arithmetic: within
    `bf16_torsos` (--bf16_learning) it runs in bfloat16 with the convolutions (`bf16_hidden_layers`).
    """

    def __init__(self, torso: nn.Module, num_actions: int, tau_embed_dim: int = 64, tau_samples_policy: int = 32, hidden_size: int = 512):
        super().__init__()
        if num_actions < 1 or tau_samples_policy < 1:
            raise ValueError(f'num_actions and tau_samples_policy must be >= 1, got {num_actions} and {tau_samples_policy}')
        self.torso = torso
        self.tau_embedding = CosineTauEmbedding(tau_embed_dim, torso.output_size)
        self.head = nn.Sequential(nn.Linear(torso.output_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, num_actions))
        self.num_actions = num_actions
        self.tau_samples_policy = tau_samples_policy

    def quantile_values(self, observation: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
        """Z_tau(s, a) [B, N, A] at the fractions taus [B, N] of each state; the torso runs once per state."""
        state_embedding = self.torso(observation).unsqueeze(1)  # psi(s): [B, 1, D]
        hidden_layer, activation, output_layer = self.head
        with bf16_hidden_layers(observation.device.type, isinstance(self.torso, NatureCnnTorso)):
            hidden = activation(hidden_layer(state_embedding * self.tau_embedding(taus)))
        return output_layer(hidden.float())

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        taus = torch.rand(observation.shape[0], self.tau_samples_policy, device=observation.device)
        return self.quantile_values(observation, taus).mean(dim=1)


def mlp_iqn_network(observation_size: int, num_actions: int, tau_embed_dim: int, tau_samples_policy: int, hidden_size: int = 64) -> ImplicitQuantileNetwork:
    """The IQN network for classic control: a one-layer MLP psi, then f with one hidden layer. f runs once per
    (state, tau) pair, B * N rows per batch, so its layers are kept small."""
    return ImplicitQuantileNetwork(MlpTorso(observation_size, (hidden_size,)), num_actions, tau_embed_dim, tau_samples_policy, hidden_size)


def nature_cnn_iqn_network(num_actions: int, tau_embed_dim: int, tau_samples_policy: int, frame_stack: int = 4) -> ImplicitQuantileNetwork:
    """The IQN network for Atari (Dabney et al. 2018): Nature DQN's convs as psi, its 512-unit layer in f."""
    return ImplicitQuantileNetwork(NatureCnnTorso(frame_stack, fully_connected=False), num_actions, tau_embed_dim, tau_samples_policy, 512)


def noise_scale(x: torch.Tensor) -> torch.Tensor:
    """f(x) = sign(x) sqrt(|x|), which shapes the factorised noise of `NoisyLinear` (Fortunato et al. 2018, eq. 11)."""
    return x.sign() * x.abs().sqrt()


class NoisyLinear(nn.Module):
    """A linear layer with learned factorised Gaussian weight noise (Fortunato et al. 2018, section 3, eq. 10-11).

    y = (mu_w + sigma_w * eps_w) x + mu_b + sigma_b * eps_b, with eps_w = f(eps_out) f(eps_in)^T and
    eps_b = f(eps_out) for eps_in ~ N(0, I_p), eps_out ~ N(0, I_q). Fresh noise is drawn on every forward call
    and shared by the whole batch. mu starts U[-1/sqrt(p), 1/sqrt(p)] and sigma at sigma_0 / sqrt(p) (the
    paper's section 3.2 for factorised noise).

    The noise stays on in evaluation mode (`.eval()`): the agent's policy is the greedy action of its noisy
    network, and the evaluation during training (which shares the online network) and eval_agent (which calls
    `.eval()`) must play that same policy. As sigma is learned, the network itself decides how much noise remains.
    `sigma_0 = 0` gives a plain linear layer.
    """

    def __init__(self, in_features: int, out_features: int, sigma_0: float = 0.5, generator: torch.Generator | None = None):
        super().__init__()
        if in_features < 1 or out_features < 1 or sigma_0 < 0:
            raise ValueError(f'NoisyLinear needs positive sizes and sigma_0 >= 0, got {in_features}, {out_features}, {sigma_0}')
        bound = in_features**-0.5
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.bias_mu = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.weight_sigma = nn.Parameter(torch.full((out_features, in_features), sigma_0 * bound))
        self.bias_sigma = nn.Parameter(torch.full((out_features,), sigma_0 * bound))
        self.generator = generator  # None: torch's global generator on the layer's device

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out_features, in_features = self.weight_mu.shape
        noise = noise_scale(torch.randn(in_features + out_features, device=self.weight_mu.device, generator=self.generator))
        epsilon_in, epsilon_out = noise[:in_features], noise[in_features:]
        # (mu_w + sigma_w * eps_out eps_in^T) x = mu_w x + eps_out * (sigma_w (eps_in * x)): the same output without
        # forming the q x p noisy weight, whose construction (and its gradient's) costs more than the batch's matmul.
        mean = nn.functional.linear(x, self.weight_mu, self.bias_mu)
        return torch.addcmul(mean, nn.functional.linear(x * epsilon_in, self.weight_sigma, self.bias_sigma), epsilon_out)


def dueling_aggregate(value: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """Q = V + A - mean_a A (Wang et al. 2016, eq. 9), with the actions on dim 1.

    value [B, 1, ...] and advantages [B, A, ...]; for distributions (Rainbow) the trailing dim holds the atoms'
    logits, aggregated atom by atom before the softmax.
    """
    return value + advantages - advantages.mean(dim=1, keepdim=True)


def categorical_support(v_min: float, v_max: float, num_atoms: int) -> torch.Tensor:
    """num_atoms evenly spaced atoms from v_min to v_max (C51's fixed support)."""
    if not v_min < v_max or num_atoms < 2:
        raise ValueError(f'a categorical support needs v_min < v_max and num_atoms >= 2, got {v_min}, {v_max}, {num_atoms}')
    steps = torch.arange(num_atoms, dtype=torch.float64) / (num_atoms - 1)
    return (v_min + (v_max - v_min) * steps).float()  # unlike linspace, puts the middle of [-10, 10] exactly on 0


class CategoricalQNetwork(nn.Module):
    """A return distribution per action on a fixed support (C51, Bellemare et al. 2017).

    `logits(s)` gives [B, A, N] logits over the N atoms; `forward(s)` the Q-values [B, A], their expectations,
    so acting and evaluation treat it as any Q network. The support is a buffer (saved in checkpoints).
    """

    def __init__(self, torso: nn.Module, num_actions: int, support: torch.Tensor):
        super().__init__()
        if num_actions < 1:
            raise ValueError(f'num_actions must be >= 1, got {num_actions}')
        self.torso = torso
        self.head = nn.Linear(torso.output_size, num_actions * len(support))
        self.num_actions = num_actions
        self.register_buffer('support', support.clone().float())

    def logits(self, observation: torch.Tensor) -> torch.Tensor:
        return self.head(self.torso(observation)).view(-1, self.num_actions, len(self.support))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return expected_value(self.logits(observation), self.support)


def expected_value(logits: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """sum_i z_i softmax(logits)_i over the last dim: the Q-values of return distributions on the support z."""
    return (torch.softmax(logits, dim=-1) * support).sum(dim=-1)


class RainbowQNetwork(nn.Module):
    """The noisy dueling categorical network of Rainbow (Hessel et al. 2018): torso, then a value stream and an
    advantage stream, each a noisy hidden layer and a noisy output layer of atom logits, combined per atom by the
    dueling aggregation. `logits` and `forward` as in `CategoricalQNetwork`."""

    def __init__(self, torso: nn.Module, num_actions: int, support: torch.Tensor, hidden_size: int, sigma_0: float = 0.5):
        super().__init__()
        if num_actions < 1:
            raise ValueError(f'num_actions must be >= 1, got {num_actions}')
        num_atoms = len(support)
        self.torso = torso
        self.num_actions = num_actions
        self.register_buffer('support', support.clone().float())
        self.value_stream = nn.Sequential(
            NoisyLinear(torso.output_size, hidden_size, sigma_0), nn.ReLU(), NoisyLinear(hidden_size, num_atoms, sigma_0)
        )
        self.advantage_stream = nn.Sequential(
            NoisyLinear(torso.output_size, hidden_size, sigma_0), nn.ReLU(), NoisyLinear(hidden_size, num_actions * num_atoms, sigma_0)
        )

    def logits(self, observation: torch.Tensor) -> torch.Tensor:
        features = self.torso(observation)
        value = self.value_stream(features).view(-1, 1, len(self.support))
        advantages = self.advantage_stream(features).view(-1, self.num_actions, len(self.support))
        return dueling_aggregate(value, advantages)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return expected_value(self.logits(observation), self.support)


def mlp_c51_network(observation_size: int, num_actions: int, support: torch.Tensor, hidden_sizes=(128, 128)) -> CategoricalQNetwork:
    """C51's network for classic control."""
    return CategoricalQNetwork(MlpTorso(observation_size, hidden_sizes), num_actions, support)


def nature_cnn_c51_network(num_actions: int, support: torch.Tensor, frame_stack: int = 4) -> CategoricalQNetwork:
    """C51's network for Atari: the Nature DQN network with N outputs per action."""
    return CategoricalQNetwork(NatureCnnTorso(frame_stack), num_actions, support)


def mlp_rainbow_network(
    observation_size: int, num_actions: int, support: torch.Tensor, sigma_0: float = 0.5, hidden_size: int = 128
) -> RainbowQNetwork:
    """Rainbow's network for classic control: one plain hidden layer, then the noisy dueling streams."""
    return RainbowQNetwork(MlpTorso(observation_size, (hidden_size,)), num_actions, support, hidden_size, sigma_0)


def nature_cnn_rainbow_network(num_actions: int, support: torch.Tensor, frame_stack: int = 4, sigma_0: float = 0.5) -> RainbowQNetwork:
    """Rainbow's network for Atari: the Nature convolutions, then noisy dueling streams of 512 hidden units."""
    return RainbowQNetwork(NatureCnnTorso(frame_stack, fully_connected=False), num_actions, support, 512, sigma_0)


def sequence_dims(observation: torch.Tensor, *per_step: tuple[str, torch.Tensor | None]) -> tuple[int, int]:
    """(T, B) of a time-major `observation` [T, B, *shape], after checking that every named per-step input is [T, B]."""
    if observation.dim() < 3:
        raise ValueError(f'observation must be [T, B, *observation_shape], got shape {tuple(observation.shape)}')
    num_steps, batch_size = observation.shape[:2]
    for name, tensor in per_step:
        if tensor is not None and tensor.shape != (num_steps, batch_size):
            raise ValueError(f'{name} must have shape [T, B]=({num_steps}, {batch_size}), got {tuple(tensor.shape)}')
    return num_steps, batch_size


def step_features(torso: nn.Module, observation: torch.Tensor) -> torch.Tensor:
    """The torso's features [T, B, F] of observations [T, B, ...]: one torso call over the T * B steps, time folded
    into the batch (`common.fold_time`), so a learner's sequences reach a Nature CNN as one large channels-last batch."""
    num_steps, batch_size = observation.shape[:2]
    return torso(fold_time(observation, isinstance(torso, NatureCnnTorso))).view(num_steps, batch_size, -1)


def unroll_lstm(
    lstm: nn.LSTM, features: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None, first: torch.Tensor | None
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """Runs a one-layer `lstm` over `features` [T, B, F] from `state` (h, c), each [B, hidden] (zeros when None),
    zeroing env b's state before step t where `first[t, b]` (an episode starts there; none when `first` is None);
    returns the outputs [T, B, hidden] and the state after the last step. One LSTM call per stretch without a reset."""
    num_steps, batch_size = features.shape[:2]
    if state is None:
        zeros = features.new_zeros(batch_size, lstm.hidden_size)
        state = (zeros, zeros.clone())
    h, c = state
    if first is None:
        first = torch.zeros(num_steps, batch_size, dtype=torch.bool, device=features.device)
    resets = (torch.nonzero(first[1:].any(dim=1)).flatten() + 1).tolist()  # steps where some env restarts
    outputs = []
    for begin, end in zip([0] + resets, resets + [num_steps]):
        keep = (~first[begin]).to(h.dtype).unsqueeze(1)
        output, (h, c) = lstm(features[begin:end], ((h * keep).unsqueeze(0), (c * keep).unsqueeze(0)))
        h, c = h.squeeze(0), c.squeeze(0)
        outputs.append(output)
    return torch.cat(outputs), (h, c)


class RecurrentQNetwork(nn.Module):
    """DRQN (Hausknecht & Stone 2015): torso -> LSTM -> linear Q head, unrolled over time.

    `forward(observation [T, B, ...], state, first [T, B])` returns Q-values [T, B, A] and the state after the
    last step. `state` is (h, c), each [B, hidden_size] (zeros when None). Where `first[t, b]` is True, env b
    starts an episode at step t and its state is zeroed before that step. The LSTM runs as one call over each
    stretch of steps without such a reset.
    """

    def __init__(self, torso: nn.Module, num_actions: int, hidden_size: int):
        super().__init__()
        if num_actions < 1 or hidden_size < 1:
            raise ValueError(f'num_actions and hidden_size must be >= 1, got {num_actions} and {hidden_size}')
        self.torso = torso
        self.lstm = nn.LSTM(torso.output_size, hidden_size)
        self.head = nn.Linear(hidden_size, num_actions)
        self.num_actions = num_actions
        self.hidden_size = hidden_size

    def initial_state(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The zero state (h, c) of `batch_size` environments, on the network's device."""
        zeros = torch.zeros(batch_size, self.hidden_size, device=self.head.weight.device)
        return zeros, zeros.clone()

    def forward(
        self,
        observation: torch.Tensor,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
        first: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        sequence_dims(observation, ('first', first))
        features = step_features(self.torso, observation)
        output, state = unroll_lstm(self.lstm, features, state, first)
        return self.head(output), state


def mlp_recurrent_q_network(observation_size: int, num_actions: int, hidden_size: int = 128) -> RecurrentQNetwork:
    """DRQN for classic control: one fully connected layer, an LSTM of `hidden_size` units, the Q head."""
    return RecurrentQNetwork(MlpTorso(observation_size, (hidden_size,)), num_actions, hidden_size)


def nature_cnn_recurrent_q_network(num_actions: int, frame_stack: int = 1) -> RecurrentQNetwork:
    """DRQN for Atari (the paper's network): Nature DQN's convolutions on single frames, then a 512-unit LSTM in
    place of its 512-unit fully connected layer, then the Q head."""
    return RecurrentQNetwork(NatureCnnTorso(frame_stack, fully_connected=False), num_actions, 512)
