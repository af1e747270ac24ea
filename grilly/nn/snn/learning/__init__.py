"""SpikingJelly 2.0's ``activation_based.learning``: the plasticity learners (``STDPLearner``,
``MSTDPLearner``, ``MSTDPETLearner``, watching a synapse and a neuron through forward hooks) and
the online-training loops (``online_learning.ottt_online_training``, ``fptt_online_training``).

    from grilly.nn.snn import learning
    learner = learning.STDPLearner("s", net[0], net[1], tau_pre=2.0, tau_post=2.0)
"""
from . import online_learning, plasticity
from .plasticity import MSTDPETLearner, MSTDPLearner, STDPLearner

__all__ = ["plasticity", "online_learning", "STDPLearner", "MSTDPLearner", "MSTDPETLearner"]
