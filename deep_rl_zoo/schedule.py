"""Schedules of hyperparameters over time (exploration epsilon, learning rate, clip range), and the learning rate
adapted to the KL divergence."""


class LinearSchedule:
    """Linear interpolation from `begin_value` to `end_value` over `decay_steps` steps starting at `begin_step`.

    Before `begin_step` the value is `begin_value`; after the decay it stays at `end_value`.
    """

    def __init__(self, begin_value: float, end_value: float, decay_steps: int, begin_step: int = 0):
        if decay_steps < 0 or begin_step < 0:
            raise ValueError(f'LinearSchedule needs decay_steps >= 0 and begin_step >= 0, got {decay_steps}, {begin_step}')
        self.begin_value = begin_value
        self.end_value = end_value
        self.decay_steps = decay_steps
        self.begin_step = begin_step

    def __call__(self, step: int) -> float:
        if self.decay_steps == 0:
            return self.end_value if step >= self.begin_step else self.begin_value
        fraction = min(max(step - self.begin_step, 0) / self.decay_steps, 1.0)
        return (1.0 - fraction) * self.begin_value + fraction * self.end_value


def kl_adaptive_learning_rate(learning_rate: float, kl: float, threshold: float, minimum: float, maximum: float, factor: float = 1.5) -> float:
    """The learning rate adapted to the policy's KL divergence (Sample Factory's kl_adaptive schedules, Petrenko et
    al. 2020): divided by `factor` (not below `minimum`) when kl > 2 x threshold, multiplied by it (not above
    `maximum`) when kl < threshold / 2, else unchanged."""
    if kl > 2.0 * threshold:
        return max(learning_rate / factor, minimum)
    if kl < 0.5 * threshold:
        return min(learning_rate * factor, maximum)
    return learning_rate
