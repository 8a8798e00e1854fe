"""Train REINFORCE on classic control.

    python -m deep_rl_zoo.reinforce.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.reinforce import agent

flags.define_common('CartPole-v1')
flags.define_reinforce()
# One update per episode, Adam 1e-3, returns standardised over each episode (a constant baseline: without it
# seeds 1-3 also reach a greedy 500 within 100k env steps but fall back to 150-330 by 200k; with it they reach
# 475 by 20k-40k and end at 500 after 200k; python -m benchmarks.learning --agents reinforce --max_steps 200000
# --eval_every 20000).
flags.set_defaults(
    num_iterations=10,
    num_train_steps=50_000,
    num_eval_steps=2_500,
    learning_rate=1e-3,
    discount=0.99,
    max_grad_norm=0.0,
    num_envs=1,
    num_episodes_per_update=1,
    normalize_advantages=True,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
