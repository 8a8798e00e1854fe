"""Train APPO (Sample Factory's asynchronous PPO) on Atari; the flags are Sample Factory's, so a model card's
config applies as it is (explicit flags win over it):

    python -m deep_rl_zoo.appo.run_atari --environment_name=atari_breakout
    python -m deep_rl_zoo.appo.run_atari --config_json=deep_rl_zoo/appo/configs/atari_amidar.json --environment_name=atari_amidar

The defaults are the atari_amidar model card's learning settings with one policy and a smaller batch for 2 cores
(`appo/settings.py`, ATARI).
"""

from deep_rl_zoo import flags
from deep_rl_zoo.appo import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
