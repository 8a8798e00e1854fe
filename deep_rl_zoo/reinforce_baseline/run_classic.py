"""Train REINFORCE with baseline on classic control.

    python -m deep_rl_zoo.reinforce_baseline.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.reinforce_baseline import agent

flags.define_common('CartPole-v1')
flags.define_reinforce()
# One update per episode, Adam 1e-3, value loss weight 0.5: seeds 1-3 reach a greedy 500 within 20k env steps and
# end at 500 after 200k (python -m benchmarks.learning --agents reinforce_baseline --max_steps 200000 --eval_every 20000).
flags.set_defaults(
    num_iterations=10,
    num_train_steps=50_000,
    num_eval_steps=2_500,
    learning_rate=1e-3,
    discount=0.99,
    max_grad_norm=0.0,
    num_envs=1,
    num_episodes_per_update=1,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
