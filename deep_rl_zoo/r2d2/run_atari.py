"""Train R2D2 on Atari with the paper's hyperparameters where this machine allows (Kapturowski et al. 2019, section 2
and appendix): sequences of 80 learned steps after a burn-in of 40, starting 40 steps apart; n = 5; discount 0.997;
Adam (lr 1e-4, eps 1e-3); batches of 64 sequences; priority exponent 0.9, eta 0.9; target network copied every 2,500
gradient steps; actors take new parameters every 400 steps; unclipped rewards through the value rescaling h; no
life-loss terminals. The paper's text reports no benefit from importance weighting and leaves it out:
--importance_sampling_exponent_begin_value=0 --importance_sampling_exponent_end_value=0 does the same; the default
weights with beta 0.6. On 2 cores: 2 actor processes of 4 environments instead of 256 actors, and a replay of 20,000
sequences (memory per sequence printed at the start and logged as replay_bytes_per_sequence), snappy-compressed.
On Montezuma's Revenge the rooms each episode visits are logged (`visited_rooms_mean` / `visited_rooms_max`, also in
the results CSV), the baseline for NGU's and Agent57's.

    python -m deep_rl_zoo.r2d2.run_atari --environment_name=Pong
    python -m deep_rl_zoo.r2d2.run_atari --environment_name=MontezumaRevenge
"""

from deep_rl_zoo import flags
from deep_rl_zoo.r2d2 import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
