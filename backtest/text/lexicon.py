"""The lexicons: one owner for the named things abstracts and questions are scanned for.

Molecules, instruments, missions and surveys, methods, physical properties, named phenomena and regions,
systematics, and the features a claim can assert or deny. Catalogued designations (WASP-39 b, NGC 1275)
are :mod:`backtest.text.objects`'s. The lexicons are small and case-sensitive where the field writes names
that way; they favour precision over recall. A cache of text scanned with them keys on this module's
source (:func:`backtest.core.caches.source_fingerprint`), so an edit here rebuilds it.
"""

from __future__ import annotations

import re
from functools import lru_cache

MOLECULES = {
    "H2O": ["H2O", "water vapour", "water vapor"],
    "CO2": ["CO2", "carbon dioxide"],
    "CO": ["CO", "carbon monoxide"],
    "CH4": ["CH4", "methane"],
    "NH3": ["NH3", "ammonia"],
    "SO2": ["SO2", "sulfur dioxide", "sulphur dioxide"],
    "H2S": ["H2S"],
    "HCN": ["HCN"],
    "TiO": ["TiO"],
    "VO": ["VO"],
    "FeH": ["FeH"],
    "C2H2": ["C2H2", "acetylene"],
    "PH3": ["PH3", "phosphine"],
    "O3": ["O3", "ozone"],
    "O2": ["O2"],
    "N2O": ["N2O"],
    "NO2": ["NO2"],
    "OH": ["OH"],
    "HDO": ["HDO"],
    "SiO": ["SiO"],
    "HCO+": ["HCO+"],
    "N2H+": ["N2H+"],
    "CH3OH": ["CH3OH", "methanol"],
    "H2CO": ["H2CO", "formaldehyde"],
    "DMS": ["DMS", "dimethyl sulfide"],
    "He": ["metastable helium", "He I"],
    "Na": ["sodium"],
    "K": ["potassium"],
    "Fe": ["Fe I", "Fe II"],
    "PAH": ["PAH", "PAHs"],
    "aerosol": ["aerosol", "aerosols"],
}

#: the formulas a question's form features count as a named subject (:mod:`backtest.text.clarity`). A fixed list:
#: the fitted judges' weights were fitted on features computed with it, so it changes only with a refit.
FORM_MOLECULES = (
    "H2O", "CO2", "CO", "CH4", "NH3", "HCN", "TiO", "VO", "Na", "K",
    "He", "H2", "O2", "O3", "SO2", "H2S", "PH3", "FeH", "SiO", "C2H2",
)  # fmt: skip
#: the molecules a controlled rewrite swaps for one another (:mod:`backtest.analysis.diversity`), in its order
SWAP_MOLECULES = ("H2O", "CO2", "CH4", "NH3", "CO", "HCN", "SO2", "TiO")

INSTRUMENTS = {
    # astronomy
    "JWST": ["JWST", "James Webb Space Telescope", "Webb"],
    "NIRSpec": ["NIRSpec"],
    "NIRISS": ["NIRISS"],
    "NIRCam": ["NIRCam"],
    "MIRI": ["MIRI"],
    "HST": ["HST", "Hubble Space Telescope"],
    "WFC3": ["WFC3"],
    "STIS": ["STIS"],
    "Spitzer": ["Spitzer"],
    "TESS": ["TESS"],
    "Kepler": ["Kepler"],
    "CHEOPS": ["CHEOPS"],
    "Gaia": ["Gaia"],
    "Euclid": ["Euclid"],
    "Rubin/LSST": ["LSST", "Rubin Observatory", "Vera C. Rubin"],
    "ZTF": ["ZTF"],
    "SDSS": ["SDSS"],
    "DESI": ["DESI"],
    "ALMA": ["ALMA"],
    "VLA": ["VLA", "JVLA"],
    "VLT": ["VLT"],
    "VLTI/GRAVITY": ["GRAVITY", "VLTI"],
    "ESPRESSO": ["ESPRESSO"],
    "CRIRES+": ["CRIRES+", "CRIRES"],
    "HARPS": ["HARPS", "HARPS-N"],
    "CARMENES": ["CARMENES"],
    "IGRINS": ["IGRINS"],
    "MAROON-X": ["MAROON-X"],
    "Keck": ["Keck", "KPF", "HIRES"],
    "Subaru": ["Subaru", "HSC"],
    "SPHERE": ["SPHERE"],
    "MUSE": ["MUSE"],
    "X-shooter": ["X-shooter", "X-Shooter"],
    "Chandra": ["Chandra"],
    "XMM-Newton": ["XMM-Newton", "XMM"],
    "NuSTAR": ["NuSTAR"],
    "Swift": ["Swift"],
    "Fermi": ["Fermi", "Fermi-LAT"],
    "NICER": ["NICER"],
    "IXPE": ["IXPE"],
    "XRISM": ["XRISM"],
    "eROSITA": ["eROSITA"],
    "Einstein Probe": ["Einstein Probe"],
    "IceCube": ["IceCube"],
    "LIGO/Virgo/KAGRA": ["LIGO", "Virgo", "KAGRA", "LVK"],
    "LISA": ["LISA"],
    "EHT": ["EHT", "Event Horizon Telescope"],
    "LOFAR": ["LOFAR"],
    "MeerKAT": ["MeerKAT"],
    "ASKAP": ["ASKAP"],
    "MWA": ["MWA"],
    "CHIME": ["CHIME"],
    "FAST": ["FAST"],
    "Planck": ["Planck"],
    "ACT": ["ACT", "Atacama Cosmology Telescope"],
    "SPT": ["SPT", "South Pole Telescope"],
    "Herschel": ["Herschel"],
    "WISE": ["WISE", "NEOWISE"],
    "GALEX": ["GALEX"],
    "LAMOST": ["LAMOST"],
    "APOGEE": ["APOGEE"],
    "GALAH": ["GALAH"],
    "DES": ["Dark Energy Survey"],
    "KiDS": ["KiDS"],
    "SPHEREx": ["SPHEREx"],
    "HETDEX": ["HETDEX"],
    "NANOGrav": ["NANOGrav", "PTA", "EPTA", "IPTA"],
    "HESS/MAGIC/VERITAS": ["H.E.S.S.", "MAGIC", "VERITAS", "LHAASO", "HAWC"],
    # heliophysics and space physics
    "Parker Solar Probe": ["Parker Solar Probe", "PSP"],
    "Solar Orbiter": ["Solar Orbiter"],
    "SDO": ["SDO", "AIA", "HMI"],
    "SOHO": ["SOHO", "LASCO"],
    "STEREO": ["STEREO"],
    "DKIST": ["DKIST"],
    "IRIS": ["IRIS"],
    "Hinode": ["Hinode"],
    "Juno": ["Juno"],
    "Cassini": ["Cassini"],
    "New Horizons": ["New Horizons"],
    "MAVEN": ["MAVEN"],
    "Rosetta": ["Rosetta"],
    "Voyager": ["Voyager"],
    "Ulysses": ["Ulysses"],
    "ACE": ["ACE"],
    "Wind": ["Wind spacecraft"],
    "THEMIS": ["THEMIS", "ARTEMIS"],
    "Cluster": ["Cluster spacecraft", "Cluster mission"],
    "MMS": ["MMS", "Magnetospheric Multiscale"],
    "Van Allen Probes": ["Van Allen Probes", "RBSP"],
    "DMSP": ["DMSP"],
    "GOES": ["GOES"],
    "POES": ["POES", "NOAA-POES"],
    "Swarm": ["Swarm"],
    "CHAMP": ["CHAMP"],
    "GRACE": ["GRACE", "GRACE-FO"],
    "GOCE": ["GOCE"],
    "COSMIC": ["COSMIC"],
    "TIMED": ["TIMED", "GUVI", "SABER"],
    "SuperDARN": ["SuperDARN"],
    "EISCAT": ["EISCAT"],
    "IMAGE": ["IMAGE satellite"],
    "GNSS/GPS": ["GNSS", "GPS"],
    "Arase": ["Arase", "ERG"],
    "Venus Express": ["Venus Express"],
    "Mars Express": ["Mars Express"],
    "MESSENGER": ["MESSENGER"],
    "Wind/ACE": ["OMNI"],
    # Earth observation, models and reanalyses
    "MODIS": ["MODIS"],
    "CALIPSO": ["CALIPSO", "CALIOP"],
    "CloudSat": ["CloudSat"],
    "AIRS": ["AIRS"],
    "MLS": ["MLS"],
    "OMI": ["OMI"],
    "TROPOMI": ["TROPOMI"],
    "IASI": ["IASI"],
    "OCO-2": ["OCO-2"],
    "Sentinel": ["Sentinel-1", "Sentinel-2", "Sentinel-5P"],
    "Landsat": ["Landsat"],
    "InSAR": ["InSAR"],
    "ERA-Interim": ["ERA-Interim"],
    "ERA5": ["ERA5"],
    "MERRA-2": ["MERRA-2", "MERRA"],
    "NCEP": ["NCEP"],
    "CMIP5": ["CMIP5"],
    "CMIP6": ["CMIP6"],
    "WRF": ["WRF"],
    "WACCM": ["WACCM"],
    "CESM": ["CESM"],
    "ECMWF": ["ECMWF"],
    "IRI": ["IRI model"],
    "AERONET": ["AERONET"],
    "USArray": ["USArray"],
    "IceSat": ["ICESat", "ICESat-2"],
    "TRMM": ["TRMM", "GPM"],
    "SMOS": ["SMOS", "SMAP"],
}

METHODS = {
    "atmospheric retrieval": [
        "atmospheric retrieval",
        "free retrieval",
        "retrievals",
        "retrieval analysis",
        "retrieval framework",
    ],
    "cross-correlation spectroscopy": ["cross-correlation", "cross correlation"],
    "high-resolution spectroscopy": ["high-resolution spectroscopy", "high resolution spectroscopy", "high-dispersion"],
    "transmission spectroscopy": ["transmission spectroscopy", "transmission spectrum", "transmission spectra"],
    "emission spectroscopy": ["emission spectroscopy", "emission spectrum", "secondary eclipse", "dayside spectrum"],
    "phase-curve analysis": ["phase curve", "phase curves"],
    "radial velocities": ["radial velocity", "radial velocities", "radial-velocity"],
    "transit timing": ["transit timing", "TTV", "TTVs"],
    "astrometry": ["astrometry", "astrometric"],
    "asteroseismology": ["asteroseismology", "asteroseismic"],
    "gyrochronology": ["gyrochronology"],
    "microlensing": ["microlensing"],
    "direct imaging": ["direct imaging", "high-contrast imaging"],
    "interferometry": ["interferometry", "interferometric"],
    "weak lensing": ["weak lensing", "cosmic shear"],
    "strong lensing": ["strong lensing", "strong gravitational lensing"],
    "SED fitting": ["SED fitting", "spectral energy distribution"],
    "MCMC sampling": ["MCMC", "Markov chain Monte Carlo"],
    "nested sampling": ["nested sampling"],
    "machine learning": ["machine learning", "neural network", "neural networks", "deep learning", "random forest"],
    "N-body simulations": ["N-body"],
    "hydrodynamical simulations": [
        "hydrodynamical simulation",
        "hydrodynamic simulation",
        "hydrodynamical simulations",
        "cosmological simulations",
    ],
    "MHD simulations": [
        "MHD simulation",
        "MHD simulations",
        "magnetohydrodynamic simulation",
        "magnetohydrodynamic simulations",
    ],
    "particle-in-cell simulations": ["particle-in-cell", "PIC simulation", "PIC simulations"],
    "hybrid simulations": ["hybrid simulation", "hybrid simulations"],
    "general circulation models": ["general circulation model", "GCM", "GCMs"],
    "radiative transfer modelling": ["radiative transfer"],
    "photochemical modelling": ["photochemical model", "photochemistry"],
    "population synthesis": ["population synthesis"],
    "data assimilation": ["data assimilation"],
    "ensemble forecasting": ["ensemble forecast", "ensemble prediction"],
    "reanalysis": ["reanalysis"],
    "Gaussian processes": ["Gaussian process", "Gaussian processes"],
    "seismic tomography": ["tomography", "tomographic"],
    "inversion": ["inversion", "inverse modelling", "inverse modeling"],
    "spectropolarimetry": ["spectropolarimetry", "Zeeman Doppler imaging"],
    "stacking analysis": ["stacking analysis", "stacked"],
    "photometric redshifts": ["photometric redshift", "photometric redshifts"],
    "kinematic modelling": ["kinematic model", "rotation curve", "rotation curves"],
}

PROPERTIES = {
    "temperature": ["temperature", "temperatures"],
    "mass": ["mass", "masses"],
    "radius": ["radius", "radii"],
    "density": ["density", "densities"],
    "metallicity": ["metallicity", "metallicities"],
    "abundance": ["abundance", "abundances"],
    "C/O ratio": ["C/O"],
    "albedo": ["albedo"],
    "obliquity": ["obliquity", "spin-orbit", "Rossiter-McLaughlin"],
    "eccentricity": ["eccentricity", "eccentricities"],
    "inclination": ["inclination"],
    "age": ["age", "ages"],
    "distance": ["distance", "distances"],
    "luminosity": ["luminosity", "luminosities"],
    "rotation period": ["rotation period", "rotational period"],
    "orbital period": ["orbital period"],
    "spin": ["spin"],
    "magnetic field": ["magnetic field", "magnetic fields", "field strength"],
    "wind speed": ["wind speed", "winds", "wind"],
    "velocity": ["velocity", "velocities"],
    "redshift": ["redshift"],
    "star formation rate": ["star formation rate", "star-formation rate", "SFR"],
    "mass-loss rate": ["mass-loss rate", "mass loss rate", "escape rate", "atmospheric escape"],
    "Hubble constant": ["Hubble constant", "H0"],
    "S8": ["S8"],
    "sigma8": ["sigma8", "σ8"],
    "dust mass": ["dust mass"],
    "accretion rate": ["accretion rate"],
    "column density": ["column density"],
    "optical depth": ["optical depth"],
    "electron density": ["electron density", "plasma density"],
    "total electron content": ["total electron content", "TEC"],
    "geomagnetic index": ["Dst", "Kp", "AE index", "SYM-H"],
    "precipitation": ["precipitation", "rainfall"],
    "sea surface temperature": ["sea surface temperature", "SST"],
    "aerosol optical depth": ["aerosol optical depth", "AOD"],
    "cloud cover": ["cloud cover", "cloud fraction"],
    "cloud properties": ["clouds"],
    "haze": ["haze", "hazes"],
    "water content": ["water content", "water mass fraction"],
    "black hole mass": ["black hole mass"],
    "initial mass function": ["initial mass function", "IMF"],
    "dark matter fraction": ["dark matter fraction"],
    "stellar mass": ["stellar mass", "stellar masses"],
    "size": ["size", "sizes"],
    "flux": ["flux", "fluxes"],
    "energy spectrum": ["energy spectrum", "spectral index"],
    "reconnection rate": ["reconnection rate"],
    "particle acceleration": ["particle acceleration", "electron acceleration"],
    "occurrence rate": ["occurrence rate"],
}

# Named phenomena and regions (space, atmospheric, geo- and astrophysics): specific subjects where
# a corpus has few catalogued designations.
PHENOMENA = {
    "magnetosphere": ["magnetosphere", "magnetospheric"],
    "ionosphere": ["ionosphere", "ionospheric"],
    "thermosphere": ["thermosphere", "thermospheric"],
    "plasmasphere": ["plasmasphere", "plasmaspheric"],
    "radiation belts": ["radiation belt", "radiation belts", "Van Allen belts"],
    "magnetopause": ["magnetopause"],
    "bow shock": ["bow shock", "bow shocks"],
    "magnetotail": ["magnetotail"],
    "ring current": ["ring current"],
    "solar wind": ["solar wind"],
    "coronal mass ejections": ["coronal mass ejection", "coronal mass ejections", "CME", "CMEs"],
    "solar flares": ["solar flare", "solar flares"],
    "substorms": ["substorm", "substorms"],
    "geomagnetic storms": ["geomagnetic storm", "geomagnetic storms", "magnetic storm", "magnetic storms"],
    "magnetic reconnection": ["magnetic reconnection", "reconnection"],
    "Alfven waves": ["Alfven wave", "Alfven waves", "Alfvén waves", "Alfvénic"],
    "whistler-mode chorus": ["chorus", "whistler", "whistler-mode", "whistlers"],
    "aurora": ["aurora", "auroral", "aurorae"],
    "cosmic rays": ["cosmic ray", "cosmic rays"],
    "solar energetic particles": ["solar energetic particle", "solar energetic particles", "SEP", "SEPs"],
    "heliosphere": ["heliosphere", "heliospheric", "heliopause"],
    "corona": ["solar corona", "coronal heating"],
    "sunspots": ["sunspot", "sunspots", "solar cycle"],
    "turbulence": ["turbulence", "turbulent cascade"],
    "sea ice": ["sea ice", "Arctic sea ice"],
    "ENSO": ["ENSO", "El Nino", "El Niño", "La Nina", "La Niña"],
    "monsoon": ["monsoon", "monsoons"],
    "jet stream": ["jet stream"],
    "stratosphere": ["stratosphere", "stratospheric"],
    "polar vortex": ["polar vortex"],
    "sudden stratospheric warmings": ["sudden stratospheric warming", "sudden stratospheric warmings", "SSW"],
    "QBO": ["QBO", "quasi-biennial oscillation"],
    "MJO": ["MJO", "Madden-Julian"],
    "tropical cyclones": ["tropical cyclone", "tropical cyclones", "hurricane", "hurricanes", "typhoon", "typhoons"],
    "earthquakes": ["earthquake", "earthquakes", "seismicity"],
    "mantle": ["mantle convection", "upper mantle", "lower mantle"],
    "geodynamo": ["geodynamo", "outer core"],
    "ice sheets": ["ice sheet", "ice sheets", "Antarctic ice", "Greenland ice"],
    "permafrost": ["permafrost"],
    "lightning": ["lightning", "sprites", "terrestrial gamma-ray flashes"],
    "gravity waves": ["gravity wave", "gravity waves"],
    "planetary boundary layer": ["boundary layer"],
    "Martian atmosphere": ["Martian atmosphere", "atmosphere of Mars"],
    "Venus atmosphere": ["Venus atmosphere", "atmosphere of Venus"],
    "Jovian magnetosphere": ["Jovian magnetosphere", "Jupiter's magnetosphere"],
    "Titan": ["Titan"],
    "Enceladus": ["Enceladus"],
}

# Terms that name a systematic or an analysis choice (for methodological challenges).
SYSTEMATICS = {
    "stellar contamination": [
        "stellar contamination",
        "unocculted",
        "starspot",
        "starspots",
        "stellar activity",
        "faculae",
    ],
    "instrument systematics": [
        "instrumental systematics",
        "instrument systematics",
        "detector systematics",
        "systematics",
    ],
    "retrieval assumptions": ["retrieval assumptions"],
    "model assumptions": ["model assumptions", "modelling assumptions", "modeling assumptions"],
    "prior choices": ["prior", "priors"],
    "calibration": ["calibration", "flux calibration"],
    "degeneracies": ["degeneracy", "degeneracies", "degenerate"],
    "selection effects": ["selection effect", "selection effects", "selection bias", "Malmquist"],
    "dust extinction": ["extinction", "dust attenuation"],
    "contamination": ["contamination", "contaminated", "blending", "blended"],
    "terminator heterogeneity": [
        "limb asymmetry",
        "terminator heterogeneity",
        "morning and evening limbs",
        "morning-evening",
    ],
    "photometric uncertainties": ["photometric uncertainties"],
    "model dependence": ["model-dependent", "model dependent", "model dependence"],
}


LEXICONS = {
    "molecule": MOLECULES,
    "instrument": INSTRUMENTS,
    "method": METHODS,
    "property": PROPERTIES,
    "systematic": SYSTEMATICS,
    "phenomenon": PHENOMENA,
}
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9+\-/.]*[A-Za-z0-9+]|[A-Za-z0-9]")
_MAX_GRAM = 4


@lru_cache(maxsize=1)
def _alias_tables() -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]], frozenset[str]]:
    """(exact-case table, lower-case table) mapping an alias to (kind, canonical name).

    Acronyms and formulas (any capital after the first letter, or a digit) match only
    as written; word-like aliases also match in lower case ("Transmission spectra")."""
    exact: dict[str, tuple[str, str]] = {}
    folded: dict[str, tuple[str, str]] = {}
    for kind, table in LEXICONS.items():
        for canon, aliases in table.items():
            for alias in aliases:
                exact.setdefault(alias, (kind, canon))
                if len(alias) >= 4 and not re.search(r"[A-Z0-9+]", alias[1:]):
                    folded.setdefault(alias.lower(), (kind, canon))
    starts = frozenset(a.split(" ")[0] for a in exact) | frozenset(a.split(" ")[0] for a in folded)
    return exact, folded, starts


def scan_terms(text: str) -> dict[str, list[str]]:
    """All lexicon terms in ``text`` in one pass: ``{kind: [canonical names, first appearance order]}``.

    Tokens are matched as n-grams (longest first, up to four tokens) against the alias
    tables, which is linear in the text and independent of the lexicon size."""
    exact, folded, starts = _alias_tables()
    tokens = [t.rstrip(".") or t for t in _TOKEN.findall(text)]
    found: dict[str, list[str]] = {kind: [] for kind in LEXICONS}
    i = 0
    while i < len(tokens):
        step = 1
        if tokens[i] not in starts and tokens[i].lower() not in starts:
            i += 1
            continue
        for n in range(min(_MAX_GRAM, len(tokens) - i), 0, -1):
            gram = " ".join(tokens[i : i + n])
            hit = exact.get(gram) or folded.get(gram.lower())
            if hit:
                kind, canon = hit
                if canon not in found[kind]:
                    found[kind].append(canon)
                step = n
                break
        i += step
    return found


def find_terms(text: str, kind: str) -> list[str]:
    """Canonical names of one lexicon's terms (molecule, instrument, method, property, systematic) in ``text``."""
    return scan_terms(text)[kind]


# Features whose presence a claim can assert or deny: the molecules, plus a few observables.
FEATURES = {
    **{m: aliases for m, aliases in MOLECULES.items() if m not in ("aerosol",)},
    "DMS": ["DMS", "dimethyl sulfide", "dimethyl sulphide"],
    "radio emission": ["radio emission"],
    "X-ray emission": ["X-ray emission"],
    "gamma-ray emission": ["gamma-ray emission"],
    "pulsations": ["pulsations"],
    "a periodic signal": ["periodicity", "periodic signal", "periodic modulation"],
    "quasi-periodic oscillations": ["QPO", "QPOs", "quasi-periodic oscillation", "quasi-periodic oscillations"],
    "an atmosphere": ["an atmosphere", "a thick atmosphere", "a secondary atmosphere"],
    "an exomoon": ["exomoon", "an exomoon"],
    "a companion": ["a companion", "a binary companion", "a planetary companion"],
    "lithium": ["lithium"],
    "neutrino emission": ["neutrino emission"],
}
