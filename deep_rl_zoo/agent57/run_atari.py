"""Train Agent57 on Atari: Montezuma's Revenge by default, with the rooms each episode visits logged
(`visited_rooms_mean` / `visited_rooms_max`).

R2D2's Atari settings (`r2d2.run_atari`: sequences of 80 learned steps after 40 of burn-in, Adam 1e-4 eps 1e-3,
batches of 64, replay of 20,000 snappy-compressed sequences, unclipped rewards through h) and NGU's appendix F values
(beta 0.3, discounts 0.997 down to 0.99, Retrace lambda 0.95, k = 10 neighbours, L = 5, memory of 30,000) and
Agent57's two Q networks and per-environment meta-controllers. On 2 cores: 2 actor processes of 4 environments and
N = 8 policies (the paper: 32 policies, 256 actors).

    python -m deep_rl_zoo.agent57.run_atari --environment_name=MontezumaRevenge
"""

from deep_rl_zoo import flags
from deep_rl_zoo.agent57 import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
