"""APPO's settings.

`AppoEvaluation`: eval_agent's settings with --policy_index (a checkpoint may hold several policies).
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class AppoEvaluation(settings.Evaluation):
    """eval_agent's settings for APPO checkpoints holding several policies (Sample Factory's enjoy)."""

    policy_index: int = settings.setting(0, 'Which policy of the checkpoint plays (0 .. num_policies - 1).', lower=0)


EVALUATION = AppoEvaluation()
