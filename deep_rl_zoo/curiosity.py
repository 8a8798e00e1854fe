"""Exploration bonuses from prediction error: the losses and rewards of ICM and RND, as pure functions.

ICM, the intrinsic curiosity module (Pathak et al. 2017, "Curiosity-driven Exploration by Self-supervised
Prediction"): an encoder phi trained by an inverse-dynamics model (predict a_t from phi(s_t), phi(s_t+1)) and a
forward model predicting phi(s_t+1) from phi(s_t) and a_t. The curiosity reward is the forward model's error,
r^i_t = eta / 2 * ||phi_hat(s_t+1) - phi(s_t+1)||^2 (eq. 6), and the module minimises
(1 - beta) L_I + beta L_F (eq. 7).

RND, random network distillation (Burda et al. 2018, "Exploration by Random Network Distillation"): a predictor
trained to match a fixed, randomly initialised target network on the next observation; its error is the
intrinsic reward, divided by a running standard deviation of the intrinsic return, which is non-episodic (it runs
on through game overs: section 2.3). The policy learns from 2 * A_ext + 1 * A_int with separate value heads and
discounts (section 2.4).

Inputs are batch-first ([B, ...]) unless the docstring says time-major ([T, N]). Rewards and advantages are
targets: they are returned without gradient.
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from deep_rl_zoo import multistep
from deep_rl_zoo.normalizer import combine_moments


def _check_features(name: str, prediction: Tensor, target: Tensor) -> None:
    if prediction.dim() != 2 or prediction.shape != target.shape:
        raise ValueError(f'{name}: prediction and target must both have shape [B, F], got {tuple(prediction.shape)} and {tuple(target.shape)}.')


def icm_forward_loss(predicted_features: Tensor, next_features: Tensor) -> Tensor:
    """ICM's forward loss L_F = 1/2 ||phi_hat(s_t+1) - phi(s_t+1)||^2 per sample (Pathak et al. 2017, eq. 5).

    The features phi(s_t+1) are a target here (detached): the encoder is trained by the inverse model only.

    Args:
      predicted_features: [B, F] the forward model's phi_hat(s_t+1).
      next_features: [B, F] the encoder's phi(s_t+1).

    Returns:
      [B] per-sample loss.
    """
    _check_features('icm_forward_loss', predicted_features, next_features)
    return 0.5 * (predicted_features - next_features.detach()).pow(2).sum(dim=-1)


def icm_inverse_loss(action_logits: Tensor, actions: Tensor) -> Tensor:
    """ICM's inverse loss L_I: cross-entropy of the action a_t under the inverse model's softmax over actions,
    predicted from phi(s_t) and phi(s_t+1) (Pathak et al. 2017, eq. 3, discrete actions).

    Args:
      action_logits: [B, A] logits of the predicted action.
      actions: [B] the actions taken (int64).

    Returns:
      [B] per-sample loss.
    """
    if action_logits.dim() != 2 or actions.shape != action_logits.shape[:1]:
        raise ValueError(f'icm_inverse_loss: action_logits must be [B, A] and actions [B], got {tuple(action_logits.shape)} and {tuple(actions.shape)}.')
    return F.cross_entropy(action_logits, actions.long(), reduction='none')


def icm_loss(inverse_loss: Tensor, forward_loss: Tensor, beta: float) -> Tensor:
    """(1 - beta) * mean L_I + beta * mean L_F, the module's objective (Pathak et al. 2017, eq. 7; beta = 0.2)."""
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f'--icm_beta must lie in [0, 1], got {beta}.')
    return (1.0 - beta) * inverse_loss.mean() + beta * forward_loss.mean()


def icm_intrinsic_reward(predicted_features: Tensor, next_features: Tensor, eta: float) -> Tensor:
    """The curiosity reward r^i_t = eta / 2 * ||phi_hat(s_t+1) - phi(s_t+1)||^2 (Pathak et al. 2017, eq. 6).

    Returns:
      [B] rewards, without gradient.
    """
    _check_features('icm_intrinsic_reward', predicted_features, next_features)
    with torch.no_grad():
        return 0.5 * eta * (predicted_features - next_features).pow(2).sum(dim=-1)


def mix_rewards(extrinsic: Tensor, intrinsic: Tensor, extrinsic_coef: float, intrinsic_coef: float) -> Tensor:
    """extrinsic_coef * r^e + intrinsic_coef * r^i: the reward ICM's policy maximises (r_t = r^i_t + r^e_t, eq. 1,
    with weights so either part can be switched off)."""
    if extrinsic.shape != intrinsic.shape:
        raise ValueError(f'mix_rewards: extrinsic and intrinsic must have the same shape, got {tuple(extrinsic.shape)} and {tuple(intrinsic.shape)}.')
    return extrinsic_coef * extrinsic + intrinsic_coef * intrinsic


def rnd_prediction_error(prediction: Tensor, target: Tensor) -> Tensor:
    """RND's error ||f_hat(x) - f(x)||^2 per sample, averaged over the F output features (Burda et al. 2018,
    section 2.2); the target f is fixed (detached). It is both the predictor's loss and the raw intrinsic reward.

    Args:
      prediction: [B, F] the predictor's f_hat(x).
      target: [B, F] the random target network's f(x).

    Returns:
      [B] per-sample error (with gradient through `prediction`).
    """
    _check_features('rnd_prediction_error', prediction, target)
    return (prediction - target.detach()).pow(2).mean(dim=-1)


def non_episodic_returns(rewards: Tensor, initial_return: Tensor, discount: float) -> Tensor:
    """The running discounted return R_t = discount * R_t-1 + r_t that never stops at an episode end
    (the "intrinsic return" whose std scales RND's rewards; Burda et al. 2018, section 2.4).

    Args:
      rewards: [T, N] rewards, time-major.
      initial_return: [N] R_-1, the return carried over from the previous rollout.
      discount: gamma in [0, 1].

    Returns:
      [T, N] returns R_0 ... R_T-1.
    """
    if rewards.dim() != 2 or initial_return.shape != rewards.shape[1:]:
        raise ValueError(f'non_episodic_returns: rewards must be [T, N] and initial_return [N], got {tuple(rewards.shape)} and {tuple(initial_return.shape)}.')
    returns = torch.empty_like(rewards)
    running = initial_return
    for t in range(rewards.shape[0]):
        running = discount * running + rewards[t]
        returns[t] = running
    return returns


class IntrinsicRewardNormalizer:
    """Divides intrinsic rewards by the running std of the non-episodic intrinsic return (Burda et al. 2018,
    section 2.4: "we normalized the intrinsic reward by dividing it by a running estimate of the standard deviations
    of the intrinsic returns").

    It keeps, per environment, the return R carried across rollouts (`non_episodic_returns`), and the running mean
    and population variance of every R seen (combined batch by batch with `normalizer.combine_moments`). Each call
    folds the batch's returns into the statistics first, then divides by sqrt(var + epsilon).
    """

    def __init__(self, num_envs: int, discount: float, epsilon: float = 1e-8):
        self.discount = discount
        self.epsilon = epsilon
        self.returns = torch.zeros(num_envs, dtype=torch.float64)
        self.mean, self.var, self.count = 0.0, 1.0, epsilon  # a tiny prior count: the first batch sets the moments

    def __call__(self, rewards: Tensor) -> Tensor:
        """Normalised rewards [T, N] of a time-major rollout batch [T, N]."""
        returns = non_episodic_returns(rewards.detach().double().cpu(), self.returns, self.discount)
        self.returns = returns[-1].clone()
        self.mean, self.var, self.count = combine_moments(
            self.mean, self.var, self.count, float(returns.mean()), float(returns.var(unbiased=False)), returns.numel()
        )
        return rewards / float(np.sqrt(self.var + self.epsilon))

    def state_dict(self) -> dict:
        return {'returns': self.returns.clone(), 'mean': self.mean, 'var': self.var, 'count': self.count}

    def load_state_dict(self, state: dict) -> None:
        self.returns = state['returns'].clone()
        self.mean, self.var, self.count = float(state['mean']), float(state['var']), float(state['count'])


def non_episodic_advantages(rewards: Tensor, values: Tensor, discount: float, gae_lambda: float) -> Tensor:
    """GAE (Schulman et al. 2016) with the same discount at every step, episode ends included: the intrinsic
    advantage of RND, whose return runs on through game overs (Burda et al. 2018, section 2.3).

    Args:
      rewards: [T, ...] intrinsic rewards.
      values: [T + 1, ...] intrinsic values V_I(s_0) ... V_I(s_T).
      discount: the intrinsic gamma (0.99 in the paper).
      gae_lambda: GAE lambda.

    Returns:
      [T, ...] advantages, without gradient.
    """
    return multistep.truncated_generalized_advantage_estimation(rewards, torch.full_like(rewards, discount), gae_lambda, values)


def combined_advantage(extrinsic: Tensor, intrinsic: Tensor, extrinsic_coef: float, intrinsic_coef: float) -> Tensor:
    """A = c_E * A_E + c_I * A_I, the advantage RND's policy follows (Burda et al. 2018, section 2.3: c_E = 2,
    c_I = 1)."""
    if extrinsic.shape != intrinsic.shape:
        raise ValueError(f'combined_advantage: extrinsic and intrinsic must have the same shape, got {tuple(extrinsic.shape)} and {tuple(intrinsic.shape)}.')
    return extrinsic_coef * extrinsic + intrinsic_coef * intrinsic
